// Package reqbody reads and decodes request bodies for the dialects: the spec's 100 MiB cap,
// the empty-body check and the classification of what can go wrong (too large, empty, not
// JSON, nested too deep, not an object, a field of the wrong type) live here once, as a
// Problem; each dialect keeps only its wording of each kind, in its own error shape.
package reqbody

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxBytes is the request body limit (413 above it).
const MaxBytes = 100 << 20

// Errors Read returns besides the transport's own.
var (
	ErrTooLarge = fmt.Errorf("the request body is larger than %d MiB", MaxBytes>>20)
	ErrEmpty    = errors.New("the request body is empty; send a JSON object")
)

// Read returns the whole body of r, refusing one over MaxBytes (by Content-Length before
// reading anything, or while reading a chunked body) and one that is empty or blank.
func Read(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBytes {
		return nil, ErrTooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, ErrTooLarge
		}
		return nil, fmt.Errorf("could not read the request body: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmpty
	}
	return data, nil
}
