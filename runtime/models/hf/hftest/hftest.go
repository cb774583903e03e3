// Package hftest is a fake Hugging Face Hub for tests and benchmarks: an
// endpoint host that serves tree listings and resolve redirects, and a
// separate CDN host that serves file bytes with Range support and injectable
// faults.
package hftest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Commit is the revision every repository reports as X-Repo-Commit.
const Commit = "5f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5"

// DefaultPageSize is how many tree entries one listing page holds.
const DefaultPageSize = 50

// Faults are failures injected into one file's CDN downloads. Each fault
// fires once and then clears itself; set a field again to re-arm it. The
// fields are atomics, so tests may set them while downloads run.
type Faults struct {
	// DropAt closes the connection once the bytes before this absolute
	// offset have been sent (0: off).
	DropAt atomic.Int64
	// StallAt stops sending at this absolute offset and hangs until the
	// client goes away (0: off).
	StallAt atomic.Int64
	// WrongBytes flips the first byte of the next response body.
	WrongBytes atomic.Bool
	// Status answers the next request with this status (0: off).
	Status atomic.Int64
	// IgnoreRange answers the next Range request with 200 and the whole file.
	IgnoreRange atomic.Bool
}

// file is one file in a fake repository.
type file struct {
	path   string
	data   []byte // nil when served from disk
	disk   string
	size   int64
	sha256 string
	blob   string // git blob id (fake)

	faults   Faults
	sent     atomic.Int64
	requests atomic.Int64
	mu       sync.Mutex
	ranges   []string // Range header of each CDN GET ("" when none)
}

// Server is a fake Hub with an endpoint host and a separate CDN host.
type Server struct {
	api, cdn *httptest.Server

	mu       sync.Mutex
	repos    map[string]map[string]*file // repo -> path -> file
	tokens   map[string]string           // repo -> required token
	commits  map[string]string           // repo -> X-Repo-Commit answered instead of Commit
	pageSize int
	authAPI  []string
	authCDN  []string
	browse   browseState // search and model metadata (search.go)
}

// New starts the endpoint and CDN listeners.
func New() *Server {
	s := &Server{repos: map[string]map[string]*file{}, tokens: map[string]string{}, commits: map[string]string{}, pageSize: DefaultPageSize}
	s.api = httptest.NewServer(http.HandlerFunc(s.serveAPI))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	return s
}

// URL returns the endpoint's base URL (for Config.Endpoint).
func (s *Server) URL() string { return s.api.URL }

// CDNURL returns the CDN host's base URL.
func (s *Server) CDNURL() string { return s.cdn.URL }

// Close shuts both listeners down.
func (s *Server) Close() {
	s.cdn.CloseClientConnections()
	s.api.Close()
	s.cdn.Close()
}

// SetPageSize sets how many entries one listing page holds.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	s.pageSize = max(n, 1)
	s.mu.Unlock()
}

// RequireToken makes repo gated: the endpoint answers 401 unless a request
// carries "Authorization: Bearer token".
func (s *Server) RequireToken(repo, token string) {
	s.mu.Lock()
	s.tokens[repo] = token
	s.mu.Unlock()
}

// SetCommit makes repo answer X-Repo-Commit: commit instead of Commit, and serve that
// revision as well (a hostile or broken Hub: commit may be "../../x" or anything else).
func (s *Server) SetCommit(repo, commit string) {
	s.mu.Lock()
	s.commits[repo] = commit
	s.mu.Unlock()
}

// commit is what repo answers as X-Repo-Commit.
func (s *Server) commit(repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.commits[repo]; ok {
		return c
	}
	return Commit
}

// AddRepo creates an empty repository.
func (s *Server) AddRepo(repo string) {
	s.mu.Lock()
	if s.repos[repo] == nil {
		s.repos[repo] = map[string]*file{}
	}
	s.mu.Unlock()
}

// AddFile adds a file to repo (creating it); the listing shows it as an LFS
// file with its sha256.
func (s *Server) AddFile(repo, path string, data []byte) {
	sum := sha256.Sum256(data)
	s.add(repo, &file{path: path, data: data, size: int64(len(data)), sha256: hex.EncodeToString(sum[:])})
}

// AddFileFromDisk adds a file served (streamed) from diskPath. It hashes the
// file once; it panics if the file cannot be read.
func (s *Server) AddFileFromDisk(repo, path, diskPath string) {
	fh, err := os.Open(diskPath)
	if err != nil {
		panic(fmt.Sprintf("hftest: %v", err))
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		panic(fmt.Sprintf("hftest: %v", err))
	}
	s.add(repo, &file{path: path, disk: diskPath, size: n, sha256: hex.EncodeToString(h.Sum(nil))})
}

func (s *Server) add(repo string, f *file) {
	blob := sha256.Sum256([]byte("blob " + f.sha256))
	f.blob = hex.EncodeToString(blob[:20])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[repo] == nil {
		s.repos[repo] = map[string]*file{}
	}
	s.repos[repo][f.path] = f
}

func (s *Server) file(repo, path string) *file {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.repos[repo][path]
	if f == nil {
		panic(fmt.Sprintf("hftest: no file %s/%s", repo, path))
	}
	return f
}

// Faults returns the fault switches of a file's CDN downloads.
func (s *Server) Faults(repo, path string) *Faults { return &s.file(repo, path).faults }

// BytesSent returns the body bytes the CDN sent for the file, all attempts.
func (s *Server) BytesSent(repo, path string) int64 { return s.file(repo, path).sent.Load() }

// Requests returns how many CDN GETs the file received.
func (s *Server) Requests(repo, path string) int { return int(s.file(repo, path).requests.Load()) }

// Ranges returns the Range header of each CDN GET of the file ("" for none).
func (s *Server) Ranges(repo, path string) []string {
	f := s.file(repo, path)
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ranges)
}

// SHA256 returns the hex sha256 of the file.
func (s *Server) SHA256(repo, path string) string { return s.file(repo, path).sha256 }

// AuthSeen returns the non-empty Authorization header values each host
// received, in order.
func (s *Server) AuthSeen() (endpoint, cdn []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authAPI), slices.Clone(s.authCDN)
}

type entry struct {
	Type string    `json:"type"`
	Oid  string    `json:"oid"`
	Size int64     `json:"size"`
	Path string    `json:"path"`
	LFS  *lfsEntry `json:"lfs,omitempty"`
}

type lfsEntry struct {
	Oid         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

func hubError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// repoFor finds the repository named by the first two segments and checks
// its token. It writes an error and returns nil when the request fails.
func (s *Server) repoFor(w http.ResponseWriter, r *http.Request, repo string) map[string]*file {
	s.mu.Lock()
	files, ok := s.repos[repo]
	token, gated := s.tokens[repo]
	s.mu.Unlock()
	if !ok {
		hubError(w, http.StatusNotFound, "Repository not found")
		return nil
	}
	if gated && r.Header.Get("Authorization") != "Bearer "+token {
		hubError(w, http.StatusUnauthorized, "Access to model "+repo+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		return nil
	}
	return files
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		s.mu.Lock()
		s.authAPI = append(s.authAPI, a)
		s.mu.Unlock()
	}
	// Split the escaped path, so that a revision holding an escaped "/" stays one segment.
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, seg := range segs {
		if u, err := url.PathUnescape(seg); err == nil {
			segs[i] = u
		}
	}
	switch {
	case len(segs) == 2 && segs[0] == "api" && segs[1] == "models" && r.Method == http.MethodGet:
		s.serveSearch(w, r)
	case len(segs) >= 6 && segs[0] == "api" && segs[1] == "models" && segs[4] == "tree" && r.Method == http.MethodGet:
		s.serveTree(w, r, segs[2]+"/"+segs[3], segs[5])
	case len(segs) >= 5 && segs[2] == "resolve" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.serveResolve(w, r, segs[0]+"/"+segs[1], segs[3], strings.Join(segs[4:], "/"))
	default:
		hubError(w, http.StatusNotFound, "Not found")
	}
}

func (s *Server) validRevision(repo, rev string) bool {
	return rev == "main" || rev == Commit || rev == s.commit(repo)
}

func (s *Server) serveTree(w http.ResponseWriter, r *http.Request, repo, rev string) {
	files := s.repoFor(w, r, repo)
	if files == nil {
		return
	}
	if !s.validRevision(repo, rev) {
		hubError(w, http.StatusNotFound, "Invalid rev id: "+rev)
		return
	}
	s.mu.Lock()
	var entries []entry
	dirs := map[string]bool{}
	for _, f := range files {
		for p := f.path; strings.Contains(p, "/"); {
			p = p[:strings.LastIndexByte(p, '/')]
			dirs[p] = true
		}
		entries = append(entries, entry{Type: "file", Oid: f.blob, Size: f.size, Path: f.path,
			LFS: &lfsEntry{Oid: f.sha256, Size: f.size, PointerSize: 134}})
	}
	for d := range dirs {
		entries = append(entries, entry{Type: "directory", Oid: strings.Repeat("0", 40), Path: d})
	}
	pageSize := s.pageSize
	s.mu.Unlock()
	if r.URL.Query().Get("recursive") != "true" {
		entries = slices.DeleteFunc(entries, func(e entry) bool { return strings.Contains(e.Path, "/") })
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.Path, b.Path) })

	cursor, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	cursor = min(max(cursor, 0), len(entries))
	end := min(cursor+pageSize, len(entries))
	if end < len(entries) {
		next := *r.URL
		next.Scheme, next.Host = "http", r.Host
		q := next.Query()
		q.Set("cursor", strconv.Itoa(end))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(entries[cursor:end])
}

func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, repo, rev, path string) {
	files := s.repoFor(w, r, repo)
	if files == nil {
		return
	}
	if !s.validRevision(repo, rev) {
		hubError(w, http.StatusNotFound, "Invalid rev id: "+rev)
		return
	}
	s.mu.Lock()
	f := files[path]
	s.mu.Unlock()
	if f == nil {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		hubError(w, http.StatusNotFound, "Entry not found")
		return
	}
	loc := s.cdn.URL + "/repos/" + repo + "/" + f.sha256 + "?path=" + url.QueryEscape(path) + "&X-Amz-Signature=fake"
	w.Header().Set("X-Repo-Commit", s.commit(repo))
	w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
	w.Header().Set("X-Linked-Size", strconv.FormatInt(f.size, 10))
	w.Header().Set("ETag", `"`+f.blob+`"`)
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusFound)
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		s.mu.Lock()
		s.authCDN = append(s.authCDN, a)
		s.mu.Unlock()
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(segs) != 4 || segs[0] != "repos" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	f := s.repos[segs[1]+"/"+segs[2]][r.URL.Query().Get("path")]
	s.mu.Unlock()
	if f == nil || f.sha256 != segs[3] {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodGet {
		f.requests.Add(1)
		f.mu.Lock()
		f.ranges = append(f.ranges, r.Header.Get("Range"))
		f.mu.Unlock()
		if code := f.faults.Status.Swap(0); code != 0 {
			http.Error(w, http.StatusText(int(code)), int(code))
			return
		}
	}

	start, end := int64(0), f.size-1
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && !(r.Method == http.MethodGet && f.faults.IgnoreRange.Swap(false)) {
		var ok bool
		start, end, ok = parseRange(rg, f.size)
		if !ok {
			w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(f.size, 10))
			http.Error(w, "range not satisfiable", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, f.size))
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", `"`+f.sha256+`"`)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.WriteHeader(status)
	if r.Method == http.MethodHead || end < start {
		return
	}
	s.sendBody(w, r, f, start, end+1)
}

// parseRange parses "bytes=A-" or "bytes=A-B" against size.
func parseRange(v string, size int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found || a == "" {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end = size - 1
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return 0, 0, false
		}
		end = min(e, size-1)
	}
	return start, end, true
}

// sendBody writes bytes [start, stop) of f, applying its faults.
func (s *Server) sendBody(w http.ResponseWriter, r *http.Request, f *file, start, stop int64) {
	var src io.ReaderAt
	if f.data != nil {
		src = bytes.NewReader(f.data)
	} else {
		fh, err := os.Open(f.disk)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		defer fh.Close()
		src = fh
	}
	// send copies [off, to) and reports whether all of it went out.
	off := start
	cw := &countingWriter{w: w, n: &f.sent}
	buf := make([]byte, 256<<10)
	send := func(to int64) bool {
		n, err := io.CopyBuffer(cw, io.NewSectionReader(src, off, to-off), buf)
		off += n
		return err == nil
	}
	if f.faults.WrongBytes.Swap(false) {
		var b [1]byte
		src.ReadAt(b[:], off)
		b[0] ^= 0xff
		n, err := w.Write(b[:])
		f.sent.Add(int64(n))
		off += int64(n)
		if err != nil {
			return
		}
	}
	if at := f.faults.DropAt.Load(); at > off && at < stop && f.faults.DropAt.CompareAndSwap(at, 0) {
		if send(at) {
			http.NewResponseController(w).Flush()
		}
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
	if at := f.faults.StallAt.Load(); at > 0 && at >= off && at < stop && f.faults.StallAt.CompareAndSwap(at, 0) {
		if send(at) {
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}
		return
	}
	send(stop)
}

// countingWriter adds what it writes to n as it goes.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
