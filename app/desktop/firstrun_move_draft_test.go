package desktop_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestMoveModelsKeepsDraftModels: a model whose draft_model is another catalog model still
// loads after the move: its worker is given the draft's file in the new folder, not the old
// path the move removed (a real worker fails its load on a draft file that is gone).
func TestMoveModelsKeepsDraftModels(t *testing.T) {
	c, cat, ids := withPulled(t)
	ctx := context.Background()
	if err := cat.Svc.SetModelSettings(ctx, store.ModelSettings{ModelID: ids[0], Speculative: "draft", DraftModel: ids[1]}); err != nil {
		t.Fatal(err)
	}
	cat.SetStartCheck(func(e *models.Entry) error {
		if p := cat.Mgr.Settings(e.ID).DraftModelPath; p != "" {
			_, err := os.Stat(p)
			return err
		}
		return nil
	})
	dir := filepath.Join(t.TempDir(), "new")
	if err := c.MoveModels(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/load", `{"model": "`+ids[0]+`"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("load after the move: %d %s", resp.StatusCode, body)
	}
}
