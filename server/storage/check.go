package storage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CheckResult is what Check found.
type CheckResult struct {
	// OK: a probe object was written, read back intact and deleted.
	OK bool
	// Reason says why not, or holds a warning when OK (an smb or nfs folder that is not a
	// mount point). It never holds the secret.
	Reason string
	// Latency is how long the whole probe took.
	Latency time.Duration
}

// Usage is what a storage holds.
type Usage struct {
	Bytes, Objects int64
}

// Open returns the Objects of the storage id.
func (s *Service) Open(ctx context.Context, id string) (Objects, error) {
	st, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.open(ctx, st)
}

func (s *Service) open(ctx context.Context, st Storage) (Objects, error) {
	if st.Kind != KindS3 {
		return OpenFolder(st.Path)
	}
	secret, err := s.cfg.Store.StorageSecret(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	return OpenS3(S3Config{Endpoint: st.Endpoint, Bucket: st.Bucket, Region: st.Region, Prefix: st.Prefix,
		AccessKey: st.AccessKey, Secret: secret})
}

// Check proves that the storage id can be read and written: it puts a probe object, reads it
// back, compares it and deletes it. A failure is a result (OK false, the reason), not an error;
// the error is for a storage that does not exist or a store that cannot be read.
func (s *Service) Check(ctx context.Context, id string) (CheckResult, error) {
	st, err := s.Get(ctx, id)
	if err != nil {
		return CheckResult{}, err
	}
	secret, err := s.cfg.Store.StorageSecret(ctx, id)
	if err != nil {
		return CheckResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CheckTimeout)
	defer cancel()
	start := time.Now()
	res := CheckResult{OK: true}
	if err := s.probe(ctx, st); err != nil {
		res.OK, res.Reason = false, err.Error()
	} else if st.Kind == KindSMB || st.Kind == KindNFS {
		if mounted, err := isMountPoint(st.Path); err == nil && !mounted {
			res.Reason = fmt.Sprintf("warning: %s is not a mount point: is the %s share mounted? Files would land on the local disk", st.Path, st.Kind)
		}
	}
	res.Latency = time.Since(start)
	res.Reason = redact(res.Reason, secret)
	return res, nil
}

func (s *Service) probe(ctx context.Context, st Storage) error {
	if st.Kind != KindS3 {
		info, err := os.Stat(st.Path)
		if err != nil {
			return fmt.Errorf("the folder %s cannot be opened: %v", st.Path, unwrapPath(err))
		}
		if !info.IsDir() {
			return fmt.Errorf("%s is not a folder", st.Path)
		}
	}
	objs, err := s.open(ctx, st)
	if err != nil {
		return err
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := ".superfluid-check-" + hex.EncodeToString(b)
	payload := []byte("superfluid storage check " + hex.EncodeToString(b) + "\n")
	if err := objs.Put(ctx, name, bytes.NewReader(payload), int64(len(payload))); err != nil {
		return fmt.Errorf("cannot write: %v", unwrapPath(err))
	}
	r, err := objs.Get(ctx, name)
	if err != nil {
		_ = objs.Delete(ctx, name)
		return fmt.Errorf("wrote a probe but cannot read it back: %v", err)
	}
	got, err := io.ReadAll(io.LimitReader(r, int64(len(payload))+1))
	r.Close()
	if err != nil || !bytes.Equal(got, payload) {
		_ = objs.Delete(ctx, name)
		if err != nil {
			return fmt.Errorf("wrote a probe but reading it back failed: %v", err)
		}
		return fmt.Errorf("the probe read back differs from what was written (%d bytes, want %d)", len(got), len(payload))
	}
	if err := objs.Delete(ctx, name); err != nil {
		return fmt.Errorf("wrote and read a probe but cannot delete it: %v", err)
	}
	return nil
}

// Usage counts the bytes and objects the storage id holds.
func (s *Service) Usage(ctx context.Context, id string) (Usage, error) {
	st, err := s.Get(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	objs, err := s.open(ctx, st)
	var list []Object
	if err == nil {
		list, err = objs.List(ctx, "")
	}
	if err != nil {
		secret, _ := s.cfg.Store.StorageSecret(ctx, id)
		return Usage{}, fmt.Errorf("%w: storage %s: %s", ErrUnavailable, st.Name, redact(err.Error(), secret))
	}
	var u Usage
	for _, o := range list {
		u.Bytes += o.Size
		u.Objects++
	}
	return u, nil
}

// redact removes the secret from text, in case a server or library echoed it.
func redact(text, secret string) string {
	if secret == "" {
		return text
	}
	return strings.ReplaceAll(text, secret, "[secret]")
}

// unwrapPath drops the *PathError's op and path where the message already names the folder.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// mountInfo is the file listing this process's mounts (a variable for tests).
var mountInfo = "/proc/self/mountinfo"

// isMountPoint reports whether dir is where a file system is mounted: its path is a mount
// point in mountinfo (field 5, octal escapes for spaces and the like).
func isMountPoint(dir string) (bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	f, err := os.Open(mountInfo)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == real {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
