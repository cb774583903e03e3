package peer

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
