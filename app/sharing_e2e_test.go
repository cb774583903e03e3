package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestTwoKeysShareOneServer: two keys of a --key-policy with different models and QoS
// ceilings share one server (real llama.cpp): each uses only its model and classes up to its
// ceiling, and sees only its own files, batches (their output files too), stored responses and
// usage (its batch's lines included); another key's ids are 404, word for word as unknown ones.
// The admin key sees both keys' usage.
func TestTwoKeysShareOneServer(t *testing.T) {
	cfg := testConfig(t, testModel)
	bobsModel := filepath.Join(t.TempDir(), "bobs.gguf")
	if err := gguftest.WriteTinyLlama(bobsModel, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := cli("add", bobsModel, "--name", "bobs", "--data-dir", cfg.DataDir); code != 0 {
		t.Fatal(errOut)
	}
	stories := modelID(testModel)
	policy := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(`{"keys": [
		{"name": "root", "key": "sk-sf-share-root", "admin": true},
		{"name": "alice", "key": "sk-sf-share-alice", "models": [%q], "qos": "interactive"},
		{"name": "bob", "key": "sk-sf-share-bob", "models": ["bobs"], "qos": "agent"}]}`, stories)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KeyPolicy = policy
	a, srv := startServer(t, cfg, true)
	ctx := context.Background()
	alice, bob := keyClient(srv.URL, "sk-sf-share-alice"), keyClient(srv.URL, "sk-sf-share-bob")
	chat := func(c *openai.Client, model string, opts ...option.RequestOption) error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(4),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}}, opts...)
		return err
	}
	status := func(err error) string {
		var e *openai.Error
		if !errors.As(err, &e) {
			return fmt.Sprint(err)
		}
		return fmt.Sprintf("%d %s", e.StatusCode, e.Code)
	}
	qos := func(class string) option.RequestOption { return option.WithHeader("x-superfluid-qos", class) }

	// Models and classes.
	steps := []struct {
		name string
		err  error
		want string
	}{
		{"alice on her model, interactive", chat(alice, stories, qos("interactive")), "<nil>"},
		{"alice on bob's model", chat(alice, "bobs"), "404 model_not_found"},
		{"bob on his model, agent", chat(bob, "bobs", qos("agent")), "<nil>"},
		{"bob on his model, background", chat(bob, "bobs", qos("background")), "<nil>"},
		{"bob above his ceiling", chat(bob, "bobs", qos("interactive")), "403 admin_required"},
		{"bob on alice's model", chat(bob, stories), "404 model_not_found"},
	}
	for _, s := range steps {
		if got := status(s.err); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
	}

	// Files and batches: alice's batch on her model; bob's file.
	batch := createBatch(t, alice, batchInput(stories, 2, 4))
	bobFile, err := bob.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader([]byte("{}\n")), "b.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	batch = waitBatch(t, alice, batch.ID, "alice's batch", batchEnded)
	if batch.Status != openai.BatchStatusCompleted || batch.RequestCounts.Completed != 2 {
		t.Fatalf("alice's batch: %s", batch.RawJSON())
	}
	// A 404 is the same for another key's id as for an unknown one of the same form.
	same404 := func(what, path, other, unknown, key string) {
		t.Helper()
		suffix := ""
		if i := strings.Index(other, "/"); i > 0 { // a sub-resource: /v1/files/ID/content
			other, suffix = other[:i], other[i:]
		}
		respO, bodyO := servertest.Do(t, "GET", srv.URL+path+other+suffix, "", "Authorization", "Bearer "+key)
		respU, bodyU := servertest.Do(t, "GET", srv.URL+path+unknown+suffix, "", "Authorization", "Bearer "+key)
		if respO.StatusCode != http.StatusNotFound || respU.StatusCode != http.StatusNotFound ||
			!bytes.Equal(bytes.ReplaceAll(bodyO, []byte(other), []byte("ID")), bytes.ReplaceAll(bodyU, []byte(unknown), []byte("ID"))) {
			t.Errorf("%s: another key's: %d %s; unknown: %d %s", what, respO.StatusCode, bodyO, respU.StatusCode, bodyU)
		}
	}
	same404("bob's file to alice", "/v1/files/", bobFile.ID, "file-000000000000000000000000", "sk-sf-share-alice")
	same404("alice's input file to bob", "/v1/files/", batch.InputFileID, "file-000000000000000000000000", "sk-sf-share-bob")
	same404("alice's output file to bob", "/v1/files/", batch.OutputFileID+"/content", "file-000000000000000000000000", "sk-sf-share-bob")
	same404("alice's batch to bob", "/v1/batches/", batch.ID, "batch_000000000000000000000000", "sk-sf-share-bob")
	if _, err := bob.Batches.Cancel(ctx, batch.ID); !strings.HasPrefix(status(err), "404") {
		t.Errorf("bob cancels alice's batch: %v", err)
	}
	if _, err := bob.Batches.New(ctx, openai.BatchNewParams{InputFileID: batch.InputFileID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); !strings.HasPrefix(status(err), "404") {
		t.Errorf("bob batches alice's file: %v", err)
	}
	for name, c := range map[string]*openai.Client{"alice": alice, "bob": bob} {
		files, err := c.Files.List(ctx, openai.FileListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range files.Data {
			ids = append(ids, f.ID)
		}
		batches, err := c.Batches.List(ctx, openai.BatchListParams{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"alice": batch.InputFileID + "," + batch.OutputFileID, "bob": bobFile.ID}[name]
		wantIDs := strings.Split(want, ",")
		slices.Sort(ids)
		slices.Sort(wantIDs)
		if !slices.Equal(ids, wantIDs) ||
			(len(batches.Data) == 1) != (name == "alice") {
			t.Errorf("%s lists files %v and %d batches", name, ids, len(batches.Data))
		}
	}

	// Stored responses.
	resp, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: stories, MaxOutputTokens: openai.Int(4),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once upon a time")}})
	if err != nil {
		t.Fatal(err)
	}
	same404("alice's response to bob", "/v1/responses/", resp.ID, "resp_000000000000000000000000", "sk-sf-share-bob")
	if _, err := alice.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{}); err != nil {
		t.Errorf("alice's own response: %v", err)
	}

	// Usage: each key its own (alice's batch lines in her name), the admin both.
	if err := a.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	usage := func(key string) map[string]int64 {
		_, body := servertest.Do(t, "GET", srv.URL+"/v1/usage?group_by=key,model", "", "Authorization", "Bearer "+key)
		var list struct {
			Data []struct {
				KeyName  string `json:"key_name"`
				Model    string
				Requests int64
			}
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		out := map[string]int64{}
		for _, r := range list.Data {
			out[r.KeyName+"/"+r.Model] = r.Requests
		}
		return out
	}
	// alice: one chat, one refused (404, recorded), two batch lines, one response.
	wantAlice := map[string]int64{"alice/" + stories: 4, "alice/bobs": 1}
	wantBob := map[string]int64{"bob/bobs": 2, "bob/" + stories: 1}
	if got := usage("sk-sf-share-alice"); fmt.Sprint(got) != fmt.Sprint(wantAlice) {
		t.Errorf("alice's usage %v, want %v", got, wantAlice)
	}
	if got := usage("sk-sf-share-bob"); fmt.Sprint(got) != fmt.Sprint(wantBob) {
		t.Errorf("bob's usage %v, want %v", got, wantBob)
	}
	all := usage("sk-sf-share-root")
	if all["alice/"+stories] != 4 || all["bob/bobs"] != 2 {
		t.Errorf("the admin's usage %v", all)
	}
}
