package media

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// imageServer serves a small PNG at /img.png and counts its requests.
func imageServer(t *testing.T) (*httptest.Server, []byte, *atomic.Int32) {
	t.Helper()
	png := encodePNG(t, halfTransparent(4, 4))
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	t.Cleanup(srv.Close)
	return srv, png, &hits
}

// permitting is a resolver with remote media on that may reach the test servers srvs (and no
// other loopback address).
func permitting(lim Limits, srvs ...*httptest.Server) Resolver {
	lim.AllowRemote = true
	r := Resolver{Limits: lim, permit: map[string]bool{}}
	for _, s := range srvs {
		r.permit[s.Listener.Addr().String()] = true
	}
	return r
}

func TestRemoteURLsOffByDefault(t *testing.T) {
	srv, _, hits := imageServer(t)
	part := llm.MediaPart{Kind: llm.MediaImage, URL: srv.URL + "/img.png", Where: "messages[0].content[0]"}
	_, err := Resolver{}.Resolve(context.Background(), part)
	mustRefuse(t, err, false, "messages[0].content[0]: remote image URLs are off; send the image inline as a data URL or base64, or start the server with --allow-remote-media")
	if hits.Load() != 0 {
		t.Errorf("the server was asked %d times with remote media off", hits.Load())
	}
}

func TestFetchRemoteImage(t *testing.T) {
	srv, png, _ := imageServer(t)
	part := llm.MediaPart{Kind: llm.MediaImage, URL: srv.URL + "/img.png"}
	m, err := permitting(Limits{}, srv).Resolve(context.Background(), part)
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodeImage(png, "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Hash != want.Hash {
		t.Errorf("fetched image hash %s; want %s", m.Hash, want.Hash)
	}
	// The very same URL, with remote media on but without the test's permit: loopback.
	_, err = Resolver{Limits: Limits{AllowRemote: true}}.Resolve(context.Background(), part)
	mustRefuse(t, err, false, "127.0.0.1", "a loopback address")
}

func TestFetchRefusesLocalAddressesEvenWithAllowRemote(t *testing.T) {
	srv, _, hits := imageServer(t)
	port := fmt.Sprintf(":%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	cases := []struct{ url, why string }{
		{"http://127.0.0.1" + port + "/img.png", "a loopback address"},
		{"http://127.9.9.9" + port + "/img.png", "a loopback address"},
		{"http://[::1]" + port + "/img.png", "a loopback address"},
		{"http://[::ffff:127.0.0.1]" + port + "/img.png", "a loopback address"},
		{"http://localhost" + port + "/img.png", "a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "a link-local address"},
		{"http://[fe80::1%25lo]/", "a link-local address"},
		{"http://0.0.0.0" + port + "/img.png", "an unspecified address"},
		{"http://[::]" + port + "/img.png", "an unspecified address"},
		{"http://[::ffff:0.0.0.0]" + port + "/img.png", "an unspecified address"},
		{"http://0.1.2.3" + port + "/img.png", "an unspecified address"},
		{"http://224.0.0.251/", "a link-local address"}, // mDNS: link-local multicast
		{"http://239.1.2.3/", "a multicast address"},
		{"http://[ff05::2]/", "a multicast address"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "a cloud provider's metadata service"}, // AWS IMDS over IPv6
		{"http://100.100.100.200/latest/meta-data/", "a cloud provider's metadata service"}, // Alibaba Cloud
	}
	r := Resolver{Limits: Limits{AllowRemote: true}}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: c.url})
			mustRefuse(t, err, false, c.why, "remote media may only come from other machines")
		})
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server was reached %d times", hits.Load())
	}
}

func TestFetchRefusesRedirectToLoopback(t *testing.T) {
	inner, _, innerHits := imageServer(t)
	outer := httptest.NewServer(http.RedirectHandler(inner.URL+"/img.png", http.StatusFound))
	t.Cleanup(outer.Close)
	// Only the redirecting server is permitted: the address it sends the fetch to is loopback.
	_, err := permitting(Limits{}, outer).Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: outer.URL})
	mustRefuse(t, err, false, "a loopback address")
	if innerHits.Load() != 0 {
		t.Errorf("the redirect's target was reached")
	}
	// Permitting both, the same redirect is followed: the refusal was the address check's.
	if _, err := permitting(Limits{}, outer, inner).Resolve(context.Background(), llm.MediaPart{URL: outer.URL}); err != nil {
		t.Errorf("with the target permitted: %v", err)
	}
}

func TestFetchLimits(t *testing.T) {
	big := make([]byte, 2048)
	mux := http.NewServeMux()
	mux.HandleFunc("/sized", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(big) })
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			_, _ = w.Write(big[:600])
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select { // answers nothing before the fetch gives up (or, were there no limit, in 5 s)
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := permitting(Limits{MaxBytes: 1024, MaxRedirects: 3, FetchTimeout: 200 * time.Millisecond}, srv)
	cases := []struct {
		path   string
		tooBig bool
		words  []string
	}{
		{"/sized", true, []string{"2 KiB", "limit is 1 KiB"}},
		{"/chunked", true, []string{"over the limit of 1 KiB"}},
		{"/loop", false, []string{"more than 3 redirects"}},
		{"/missing", false, []string{"404 Not Found"}},
		{"/slow", false, []string{"took longer than 200ms"}},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: srv.URL + c.path})
			mustRefuse(t, err, c.tooBig, c.words...)
		})
	}
}

func TestResolveAudioPartsAndSchemes(t *testing.T) {
	wav := writeWAV(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, sine(8000, 1, 440, 16000, 0.5))
	m, err := Resolver{}.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaAudio, MIME: "wav", Data: wav})
	if err != nil || m.Kind != llm.MediaAudio || m.Samples() != 8000 {
		t.Fatalf("inline WAV: kind %q, %d samples, %v", m.Kind, m.Samples(), err)
	}
	// A part whose kind is unset is taken from its bytes.
	if m, err := (Resolver{}).Resolve(context.Background(), llm.MediaPart{Data: wav}); err != nil || m.Kind != llm.MediaAudio {
		t.Errorf("kindless WAV: %q, %v", m.Kind, err)
	}
	_, err = Resolver{}.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaAudio, URL: "ftp://example.com/a.wav"})
	mustRefuse(t, err, false, `scheme "ftp"`)
	_, err = Resolver{}.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaAudio, Where: "input[2]"})
	mustRefuse(t, err, false, "input[2]: the audio part has no data")
	huge := "data:image/png;base64," + strings.Repeat("A", 2048)
	_, err = Resolver{Limits: Limits{MaxBytes: 1000}}.Resolve(context.Background(), llm.MediaPart{URL: huge})
	// Refused from the URL's length, before its base64 is decoded.
	mustRefuse(t, err, true, "the image is about 2 KiB", "limit is 1000 bytes")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Resolver{}).Resolve(ctx, llm.MediaPart{Data: wav}); err != context.Canceled {
		t.Errorf("with a cancelled context: %v", err)
	}
}

// TestFetchRefusesThisMachinesOtherAddresses: a server listening on every interface answers
// at the machine's own non-loopback addresses too (its LAN or container address), so with
// --allow-remote-media a URL naming one is refused as this machine, like loopback, and the
// server is never reached.
func TestFetchRefusesThisMachinesOtherAddresses(t *testing.T) {
	var own []netip.Addr
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && forbidden(ip.Unmap()) == "" {
				own = append(own, ip.Unmap())
			}
		}
	}
	if len(own) == 0 {
		t.Skip("this machine has no interface address besides loopback and link-local ones")
	}
	ln, err := net.Listen("tcp", ":0") // every interface
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	r := Resolver{Limits: Limits{AllowRemote: true, FetchTimeout: 2 * time.Second}}
	for _, ip := range own {
		url := "http://" + netip.AddrPortFrom(ip, port).String() + "/img.png"
		_, err := r.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: url})
		mustRefuse(t, err, false, "an address of this machine", "remote media may only come from other machines")
	}
	if hits.Load() != 0 {
		t.Errorf("this machine's server was reached %d times", hits.Load())
	}
}
