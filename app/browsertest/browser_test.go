package browsertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// site serves a clean page, and a page with each kind of problem the helper must catch.
func site() *httptest.Server {
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'")
			_, _ = w.Write([]byte("<!doctype html><html><head><title>t</title></head><body>" + body + "</body></html>"))
		}
	}
	mux.HandleFunc("/clean", page(`<p id="out">waiting</p><script src="/clean.js"></script>`))
	mux.HandleFunc("/clean.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		// A fetch answered 404 is the page's business, not a broken page.
		_, _ = w.Write([]byte(`fetch('/api/none').then(r => { document.getElementById('out').textContent = 'status ' + r.status; });`))
	})
	mux.HandleFunc("/api/none", http.NotFound)
	mux.HandleFunc("/broken", page(`<script src="/missing.js"></script><script>inline()</script><script src="/broken.js"></script>`))
	mux.HandleFunc("/broken.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(`console.error('bad thing'); setTimeout(() => { throw new Error('thrown later'); }, 0);`))
	})
	mux.HandleFunc("/missing.js", http.NotFound)
	return httptest.NewServer(mux)
}

func TestCleanPageHasNoProblems(t *testing.T) {
	srv := site()
	defer srv.Close()
	b := Start(t, 800, 600)
	b.Do("open", chromedp.Navigate(srv.URL+"/clean"))
	b.WaitText("#out", "status 404", 10*time.Second)
	if got := b.Text("#out"); got != "status 404" {
		t.Fatalf("text = %q", got)
	}
	if p := b.ConsoleErrors(); len(p) != 0 {
		t.Fatalf("problems on a clean page: %v", p)
	}
}

func TestBrokenPageProblemsAreCaught(t *testing.T) {
	srv := site()
	defer srv.Close()
	b := Start(t, 800, 600)
	b.Do("open", chromedp.Navigate(srv.URL+"/broken"))
	want := []string{"missing.js", "Content Security Policy", "bad thing", "thrown later"}
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = append(got, b.ConsoleErrors()...)
		all := strings.Join(got, "\n")
		missing := false
		for _, w := range want {
			missing = missing || !strings.Contains(all, w)
		}
		if !missing {
			return
		}
	}
	t.Fatalf("problems seen: %q, want each of %q", got, want)
}
