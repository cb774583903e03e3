// Package s3test starts an S3-compatible server for tests: github.com/johannesboyne/gofakes3
// (in memory) behind an httptest server, with AWS Signature Version 4 checked against one
// access key and secret, which gofakes3 itself does not do. A request signed with another key
// gets 403 InvalidAccessKeyId, one signed with another secret 403 SignatureDoesNotMatch, as
// from a real S3 server.
package s3test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Server is a running fake S3 server.
type Server struct {
	URL       string // http://127.0.0.1:PORT
	AccessKey string
	Secret    string
	Backend   *s3mem.Backend
}

// Start starts a server accepting only accessKey/secret with the given buckets created; it
// stops when the test ends.
func Start(t testing.TB, accessKey, secret string, buckets ...string) *Server {
	t.Helper()
	backend := s3mem.New()
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			t.Fatalf("create bucket %s: %v", b, err)
		}
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	inner := fake.Server()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, err := verify(r, accessKey, secret); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, err)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return &Server{URL: ts.URL, AccessKey: accessKey, Secret: secret, Backend: backend}
}

// verify checks r's Authorization header (AWS4-HMAC-SHA256) against accessKey and secret.
func verify(r *http.Request, accessKey, secret string) (code string, err error) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "AccessDenied", errors.New("Anonymous access is forbidden")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.SplitN(fields["Credential"], "/", 2)
	if len(scope) != 2 || scope[0] != accessKey {
		return "InvalidAccessKeyId", errors.New("The AWS Access Key Id you provided does not exist in our records.")
	}
	scopeParts := strings.Split(scope[1], "/") // date/region/service/aws4_request
	if len(scopeParts) != 4 {
		return "AuthorizationHeaderMalformed", errors.New("bad credential scope")
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var headers strings.Builder
	for _, h := range signed {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = r.Host
		}
		headers.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	query := r.URL.Query()
	canonical := strings.Join([]string{r.Method, s3utils.EncodePath(r.URL.Path),
		strings.ReplaceAll(query.Encode() /* sorted by key */, "+", "%20"), headers.String(), fields["SignedHeaders"],
		r.Header.Get("X-Amz-Content-Sha256")}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + r.Header.Get("X-Amz-Date") + "\n" + scope[1] + "\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + secret)
	for _, p := range scopeParts {
		key = mac(key, p)
	}
	want := hex.EncodeToString(mac(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", errors.New("The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	return "", nil
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
