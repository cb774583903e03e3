package batches

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// The quota of the file store (--files-max-bytes): uploads reserve their bytes before they
// write them.

// fileQuota is the part of --files-max-bytes that uploads in progress have reserved. An
// upload reserves its bytes before it writes them, so concurrent uploads cannot each fill the
// room one look at the stored total showed free: at no time do the stored files and the
// uploads on disk take more than the quota.
type fileQuota struct {
	mu       sync.Mutex
	reserved int64
}

// quotaChunk is how much an upload reserves at a time: small, so that a small upload does not
// hold room a concurrent one could have used; large enough that the stored total is read once
// per chunk, not once per write.
const quotaChunk = 64 << 10

// reserve takes up to want bytes of the quota: what the stored files and the other uploads
// leave free, at most want.
func (s *Service) reserve(ctx context.Context, want int64) (int64, error) {
	q := &s.quota
	q.mu.Lock()
	defer q.mu.Unlock()
	used, err := s.store.FilesBytes(ctx)
	if err != nil {
		return 0, err
	}
	got := min(want, max(0, s.cfg.Files.MaxBytes-used-q.reserved))
	q.reserved += got
	return got, nil
}

// unreserve gives n reserved bytes back.
func (s *Service) unreserve(n int64) {
	if n == 0 {
		return
	}
	s.quota.mu.Lock()
	s.quota.reserved -= n
	s.quota.mu.Unlock()
}

// quotaWriter writes to w only bytes reserved first; a write that finds no room is
// ErrFilesQuota and writes nothing.
type quotaWriter struct {
	s       *Service
	ctx     context.Context
	w       io.Writer
	granted int64
	written int64
}

func (q *quotaWriter) Write(p []byte) (int, error) {
	if need := q.written + int64(len(p)) - q.granted; need > 0 {
		got, err := q.s.reserve(q.ctx, max(need, quotaChunk))
		q.granted += got
		if err != nil {
			return 0, err
		}
		if got < need {
			return 0, ErrFilesQuota
		}
	}
	n, err := q.w.Write(p)
	q.written += int64(n)
	return n, err
}

// quotaError refuses an upload of n bytes or more that does not fit in the quota.
func (s *Service) quotaError(n int64) error {
	return fmt.Errorf("%w: the upload (%d bytes or more) does not fit in --files-max-bytes %d; delete files (DELETE /v1/files/{id}) or raise the limit",
		ErrFilesQuota, n, s.cfg.Files.MaxBytes)
}
