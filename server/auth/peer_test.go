package auth

import (
	"net/http/httptest"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5000": true, "[::1]:80": true, "127.9.9.9:1": true, "[::ffff:127.0.0.1]:1": true,
		"192.168.1.5:80": false, "[2001:db8::1]:80": false, "10.0.0.1:443": false, "garbage": false, "": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		if got := IsLoopback(r); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestAdmin(t *testing.T) {
	cases := []struct {
		name, addr string
		id         *Identity
		want       bool
		refusal    string
		headers    []string
	}{
		{"no keys, this machine", "127.0.0.1:1", nil, true, "", nil},
		{"no keys, another machine", "192.168.1.5:1", nil, false, AdminOnlyMessage, nil},
		{"admin key, another machine", "192.168.1.5:1", &Identity{Admin: true}, true, "", nil},
		{"plain key, this machine", "127.0.0.1:1", &Identity{}, false, NotAdminMessage, nil},
		{"no keys, a page on this machine", "127.0.0.1:1", nil, false, BrowserMessage, []string{"Origin", "http://localhost:3000"}},
		{"no keys, a page of another port (no Origin)", "[::1]:1", nil, false, BrowserMessage, []string{"Sec-Fetch-Site", "same-site"}},
		{"no keys, a cross-site page", "127.0.0.1:1", nil, false, BrowserMessage, []string{"Sec-Fetch-Site", "cross-site"}},
		{"no keys, typed in the address bar", "127.0.0.1:1", nil, true, "", []string{"Sec-Fetch-Site", "none"}},
		{"no keys, through a local proxy", "127.0.0.1:1", nil, false, ProxiedMessage, []string{"X-Forwarded-For", "203.0.113.9"}},
		{"no keys, through a proxy that sends Forwarded", "127.0.0.1:1", nil, false, ProxiedMessage, []string{"Forwarded", "for=203.0.113.9"}},
		{"admin key through a proxy", "127.0.0.1:1", &Identity{Admin: true}, true, "", []string{"X-Forwarded-For", "203.0.113.9"}},
		{"admin key from a page", "127.0.0.1:1", &Identity{Admin: true}, true, "", []string{"Origin", "http://localhost:3000"}},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/v1/models/load", nil)
		r.RemoteAddr = c.addr
		for i := 0; i+1 < len(c.headers); i += 2 {
			r.Header.Set(c.headers[i], c.headers[i+1])
		}
		if c.id != nil {
			r = r.WithContext(NewContext(r.Context(), c.id))
		}
		if ok, refusal := Admin(r); ok != c.want || refusal != c.refusal {
			t.Errorf("%s: %v %q", c.name, ok, refusal)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "localhost": true, "LocalHost": true, "::1": true, "[::1]": true, "127.0.0.2": true,
		"": false, "0.0.0.0": false, "::": false, "192.168.1.5": false, "myhost.lan": false, "::ffff:127.0.0.1": true,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v", host, got)
		}
	}
}

// TestCrossOrigin: only a request this server's own page sent (or one typed into the address
// bar, or one not from a browser) is same-origin; a page on another port of this host is
// another origin although browsers call it the same site.
func TestCrossOrigin(t *testing.T) {
	cases := []struct {
		name    string
		headers []string
		want    bool
	}{
		{"no browser", nil, false},
		{"typed address", []string{"Sec-Fetch-Site", "none"}, false},
		{"own page", []string{"Origin", "http://127.0.0.1:8453", "Sec-Fetch-Site", "same-origin"}, false},
		{"own page, GET without Origin", []string{"Sec-Fetch-Site", "same-origin"}, false},
		{"another port of this host, GET without Origin", []string{"Sec-Fetch-Site", "same-site"}, true},
		{"another port of this host", []string{"Origin", "http://127.0.0.1:3000"}, true},
		{"another site, GET without Origin", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"sandboxed page", []string{"Origin", "null"}, true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8453/props?autoload=1", nil)
		for i := 0; i+1 < len(c.headers); i += 2 {
			r.Header.Set(c.headers[i], c.headers[i+1])
		}
		if got := CrossOrigin(r); got != c.want {
			t.Errorf("%s: CrossOrigin = %v, want %v", c.name, got, c.want)
		}
	}
}
