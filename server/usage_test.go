package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestUsageRoute: GET /v1/usage sums the request records by key, model and day: an admin sees
// every key (or one, with key=), another key only its own (403 admin_required for another's);
// bad dates and groupings are 400.
func TestUsageRoute(t *testing.T) {
	p := setupPolicy(t, server.Config{}, 0, nil)
	for key, n := range map[string]int{keyBG: 2, keyFree: 1, keyAdmin: 1} {
		for range n {
			if _, err := p.chat(key, "hi"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.store.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	type row struct {
		KeyID            *string `json:"key_id"`
		KeyName          *string `json:"key_name"`
		Model            *string `json:"model"`
		Date             *string `json:"date"`
		Requests         int64   `json:"requests"`
		PromptTokens     int64   `json:"prompt_tokens"`
		CompletionTokens int64   `json:"completion_tokens"`
		TotalTokens      int64   `json:"total_tokens"`
	}
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	// summary shows rows as "key/model/date:requests".
	summary := func(rows []row) string {
		var out []string
		for _, r := range rows {
			if r.TotalTokens != r.PromptTokens+r.CompletionTokens || r.CompletionTokens != int64(len("Once upon a time"))*r.Requests {
				t.Errorf("tokens of %+v", r)
			}
			out = append(out, str(r.KeyName)+"/"+str(r.Model)+"/"+strings.ReplaceAll(str(r.Date), today, "today")+":"+string(rune('0'+r.Requests)))
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name   string
		key    string
		query  string
		status int
		want   string // summary, or a piece of the error message
	}{
		{"admin sees every key", keyAdmin, "", 200, "admin/m1/today:1 bg/m1/today:2 free/m1/today:1"},
		{"a key sees its own", keyBG, "", 200, "bg/m1/today:2"},
		{"a key by its name", keyBG, "?key=bg&group_by=day", 200, "null/null/today:2"},
		{"admin filters one key", keyAdmin, "?key=policy:free&group_by=model", 200, "null/m1/null:1"},
		{"one total", keyAdmin, "?group_by=none&start_date=" + today + "&end_date=" + today, 200, "null/null/null:4"},
		{"a range with nothing", keyAdmin, "?start_date=2000-01-01&end_date=2000-12-31", 200, ""},
		{"another key's usage", keyBG, "?key=free", 403, "only an admin key may read other keys' usage"},
		{"a bad date", keyAdmin, "?start_date=yesterday", 400, "YYYY-MM-DD"},
		{"an end before the start", keyAdmin, "?start_date=2026-02-01&end_date=2026-01-01", 400, "before the start date"},
		{"a bad grouping", keyAdmin, "?group_by=key,week", 400, "group_by takes key, model and day"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := servertest.Do(t, "GET", p.srv.URL+"/v1/usage"+tt.query, "", "Authorization", "Bearer "+tt.key)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tt.status != 200 {
				var e struct {
					Error struct{ Message, Type, Code string }
				}
				if err := json.Unmarshal(body, &e); err != nil || !strings.Contains(e.Error.Message, tt.want) ||
					(tt.status == 403) != (e.Error.Code == "admin_required") {
					t.Fatalf("%s: %v", body, err)
				}
				return
			}
			var list struct {
				Object string
				Data   []row
			}
			if err := json.Unmarshal(body, &list); err != nil || list.Object != "list" || list.Data == nil {
				t.Fatalf("%s: %v", body, err)
			}
			if got := summary(list.Data); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
