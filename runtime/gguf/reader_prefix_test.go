package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// TestReadPrefixBoundsLyingCounts: a header prefix claiming billions of keys, or an array of
// billions of values, in a file the Hub lists as a terabyte fails as truncated from the bytes
// at hand instead of allocating for the claim.
func TestReadPrefixBoundsLyingCounts(t *testing.T) {
	le := binary.LittleEndian
	head := func(nKV uint64) []byte {
		b := []byte("GGUF")
		b = le.AppendUint32(b, 3)
		b = le.AppendUint64(b, 0)
		return le.AppendUint64(b, nKV)
	}
	keys := head(1 << 36)
	array := head(1)
	array = le.AppendUint64(array, 1)
	array = append(array, 'k')
	array = le.AppendUint32(array, uint32(ValueArray))
	array = le.AppendUint32(array, uint32(ValueUint8))
	array = le.AppendUint64(array, 1<<35)
	for name, b := range map[string][]byte{"keys": keys, "array": array} {
		_, err := ReadPrefix(bytes.NewReader(b), int64(len(b)), 1<<40)
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: err = %v, want truncated", name, err)
		}
	}
}
