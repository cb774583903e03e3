package llamacpp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A saved prefix is one file, <name>.kv, little endian:
//
//	magic "SFKVSEQ\x00", format version (u32)
//	model path, settings, cache partition (each a u32 length and the bytes)
//	token count (u32), the tokens (i32 each)
//	payload length (u64), the payload (llama_state_seq_get_data of the lane)
//	crc32c (Castagnoli) of every byte before it (u32)
//
// It is written to a temp file in the same folder, synced and renamed, so a reader sees a
// whole file or none; a temp file a killed writer left is removed at the next Load.
const (
	kvMagic     = "SFKVSEQ\x00"
	kvVersion   = 1
	kvExt       = ".kv"
	kvTmpExt    = ".tmp"
	kvMaxString = 1 << 16 // the longest model path, settings or partition a header holds
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// errKVFile says a saved prefix is not usable: truncated, corrupt, or not ours.
var errKVFile = errors.New("not a usable prefix cache file")

// errKVNewer says a file was written by a newer format; it is skipped, not deleted.
var errKVNewer = errors.New("written by a newer format")

// kvEntry is one saved prefix as the index holds it: the header, not the payload.
type kvEntry struct {
	name                       string // the file's base name
	model, settings, partition string
	tokens                     []int
	size                       int64
}

// kvStore is the folder of saved prefixes: the files, an index of the entries of one model
// (their headers, read at open), and the size cap. Workers of other models share the folder;
// the cap counts every file in it. Its methods are safe for concurrent use.
type kvStore struct {
	dir   string
	max   int64
	model string

	mu      sync.Mutex
	entries map[string]*kvEntry
	bytes   int64 // the folder's size at the last scan
	// gone keeps the tokens of this model's entries the cap removed, for the "evicted" miss
	// reason; the kvDisk takes them.
	gone []*kvEntry
}

// openKVStore makes dir if needed, removes temp files their writers left, and reads the
// headers of model's files; bad files are deleted, files of a newer format skipped.
func openKVStore(dir string, max int64, model string) (*kvStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &kvStore{dir: dir, max: max, model: model, entries: map[string]*kvEntry{}}
	items, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		name := it.Name()
		path := filepath.Join(dir, name)
		if !it.Type().IsRegular() {
			continue // a FIFO, device or symlink is none of ours: never opened, never removed
		}
		switch {
		case strings.HasSuffix(name, kvTmpExt):
			if abandonedTemp(name) {
				os.Remove(path)
			}
		case strings.HasSuffix(name, kvExt):
			ent, err := readKVHeader(path)
			switch {
			case errors.Is(err, errKVNewer), errors.Is(err, os.ErrNotExist):
			case err != nil:
				os.Remove(path)
			case ent.model == model:
				s.entries[name] = ent
			}
		}
	}
	s.scan("")
	return s, nil
}

// abandonedTemp reports whether a temp file's writer is gone: its name carries the writer's
// pid (".<name>.<pid>.tmp"), and a live writer of another process may still rename it.
func abandonedTemp(name string) bool {
	parts := strings.Split(strings.TrimSuffix(name, kvTmpExt), ".")
	pid, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == os.Getpid() {
		return false // an engine of this process writes it now
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// kvName is the file name of a prefix: a hash of everything that identifies it.
func kvName(model, settings, partition string, tokens []int) string {
	h := sha256.New()
	for _, s := range []string{model, settings, partition} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var b [4]byte
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:20]) + kvExt
}

// kvWriteHook, when set (by tests), runs after the first half of a file is written to its
// temp file: a test kills the writer there to play a crash mid-write.
var kvWriteHook func(tmp string)

// kvTemps numbers this process's temp files, so two engines never write the same one.
var kvTemps atomic.Int64

// write saves ent with payload atomically and then removes the oldest files until the folder
// fits the cap. A payload bigger than the cap is not written.
func (s *kvStore) write(ent *kvEntry, payload []byte) error {
	data := encodeKV(ent, payload)
	if int64(len(data)) > s.max {
		return fmt.Errorf("the prefix (%d bytes) is bigger than the cap (%d bytes)", len(data), s.max)
	}
	ent.size = int64(len(data))
	final := filepath.Join(s.dir, ent.name)
	tmp := filepath.Join(s.dir, fmt.Sprintf(".%s.%d.%d%s", ent.name, kvTemps.Add(1), os.Getpid(), kvTmpExt))
	if err := writeAtomic(tmp, final, data); err != nil {
		return err
	}
	s.mu.Lock()
	s.entries[ent.name] = ent
	s.mu.Unlock()
	s.scan(ent.name)
	return nil
}

func writeAtomic(tmp, final string, data []byte) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	half := len(data) / 2
	_, err = f.Write(data[:half])
	if err == nil && kvWriteHook != nil {
		kvWriteHook(tmp)
	}
	if err == nil {
		_, err = f.Write(data[half:])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(final)); err == nil {
		d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return nil
}

// read returns ent's payload after checking the whole file: its checksum, and that its header
// is still ent's. A file that does not check is deleted and leaves the index.
func (s *kvStore) read(ent *kvEntry) ([]byte, error) {
	path := filepath.Join(s.dir, ent.name)
	data, err := readRegular(path)
	if err != nil {
		s.forget(ent.name)
		return nil, err
	}
	got, start, err := s.check(data)
	if err == nil && (got.model != ent.model || got.settings != ent.settings || got.partition != ent.partition ||
		commonPrefix(got.tokens, ent.tokens) != len(ent.tokens) || len(got.tokens) != len(ent.tokens)) {
		err = fmt.Errorf("%w: the header changed", errKVFile)
	}
	if err != nil {
		s.remove(ent.name)
		return nil, err
	}
	now := time.Now()
	os.Chtimes(path, now, now) // least recently used goes first
	return data[start : len(data)-4], nil
}

func (s *kvStore) check(data []byte) (*kvEntry, int64, error) {
	if len(data) < 4 {
		return nil, 0, fmt.Errorf("%w: truncated", errKVFile)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crc32c) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, 0, fmt.Errorf("%w: bad checksum", errKVFile)
	}
	return kvHeader(bytes.NewReader(data), int64(len(data)))
}

// touch marks ent as used now.
func (s *kvStore) touch(ent *kvEntry) {
	now := time.Now()
	if os.Chtimes(filepath.Join(s.dir, ent.name), now, now) != nil {
		s.forget(ent.name)
	}
}

// remove deletes a file and its index entry.
func (s *kvStore) remove(name string) {
	os.Remove(filepath.Join(s.dir, name))
	s.forget(name)
}

func (s *kvStore) forget(name string) {
	s.mu.Lock()
	delete(s.entries, name)
	s.mu.Unlock()
}

// list is a copy of the index.
func (s *kvStore) list() []*kvEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*kvEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	return out
}

// size is the folder's size at the last scan.
func (s *kvStore) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// takeGone hands over the tokens of the entries the cap removed since the last call.
func (s *kvStore) takeGone() []*kvEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gone
	s.gone = nil
	return g
}

// scan sums the folder's files and removes the least recently used (oldest mtime) until it
// fits the cap, keeping the file just written (keep) when another can go. Files vanish under
// it when other workers prune too; that is fine.
func (s *kvStore) scan(keep string) {
	items, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, it := range items {
		if !strings.HasSuffix(it.Name(), kvExt) {
			continue
		}
		info, err := it.Info()
		if err != nil {
			continue
		}
		files = append(files, file{it.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(files, func(a, b int) bool { return files[a].used.Before(files[b].used) })
	for _, f := range files {
		if total <= s.max {
			break
		}
		if f.name == keep {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, f.name)); err == nil || errors.Is(err, os.ErrNotExist) {
			total -= f.size
		}
		s.mu.Lock()
		if ent := s.entries[f.name]; ent != nil {
			s.gone = append(s.gone, ent)
			delete(s.entries, f.name)
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.bytes = total
	s.mu.Unlock()
}

// openRegular opens path for reading only when it is a regular file in the folder itself: not
// through a symlink, and never blocking on a FIFO or device someone put there.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%w: not a regular file", errKVFile)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readRegular is os.ReadFile through openRegular.
func readRegular(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
