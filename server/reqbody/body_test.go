package reqbody

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// endless yields bytes forever, so a body over the cap is never held in memory.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestRead(t *testing.T) {
	cases := []struct {
		name    string
		body    io.Reader
		length  int64
		want    string
		wantErr error
	}{
		{"json", strings.NewReader(`{"a":1}`), 7, `{"a":1}`, nil},
		{"empty", strings.NewReader(""), 0, "", ErrEmpty},
		{"blank", strings.NewReader(" \n\t"), 3, "", ErrEmpty},
		{"declared too large", strings.NewReader("{}"), MaxBytes + 1, "", ErrTooLarge},
		{"chunked too large", io.LimitReader(endless{}, MaxBytes+1), -1, "", ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", c.body)
			r.ContentLength = c.length
			got, err := Read(r)
			if !errors.Is(err, c.wantErr) || string(got) != c.want {
				t.Fatalf("Read = %q, %v; want %q, %v", got, err, c.want, c.wantErr)
			}
		})
	}
}
