package hftest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Info is what the model search tells about one repository.
type Info struct {
	Author       string
	Downloads    int64
	Likes        int64
	Trending     int64 // the trendingScore sort key
	LastModified time.Time
	License      string
	Parameters   int64
	Gated        bool
}

// SearchFault is how the next searches fail.
type SearchFault int32

// Search faults.
const (
	SearchOK      SearchFault = iota
	SearchHang                // no answer until the client goes away
	SearchGarbage             // 200 with a body that is not JSON
	SearchHuge                // 200 with an endless JSON array
)

// browseState is the search side of the fake Hub.
type browseState struct {
	info  map[string]Info // repo -> metadata; a repo without any is found with zero values
	fault atomic.Int32
}

// SetInfo sets what the search answers about repo (which AddRepo or AddFile made).
func (s *Server) SetInfo(repo string, in Info) {
	s.mu.Lock()
	if s.browse.info == nil {
		s.browse.info = map[string]Info{}
	}
	s.browse.info[repo] = in
	s.mu.Unlock()
}

// SetSearchFault makes every search fail as f until set back to SearchOK.
func (s *Server) SetSearchFault(f SearchFault) { s.browse.fault.Store(int32(f)) }

// searchEntry is one model of the search's answer, in the Hub's field names.
type searchEntry struct {
	ID           string   `json:"id"`
	Author       string   `json:"author"`
	Downloads    int64    `json:"downloads"`
	Likes        int64    `json:"likes"`
	Trending     int64    `json:"trendingScore"`
	LastModified string   `json:"lastModified"`
	Tags         []string `json:"tags"`
	Gated        any      `json:"gated"`
	GGUF         *struct {
		Total int64 `json:"total"`
	} `json:"gguf,omitempty"`
}

// serveSearch answers GET /api/models: repositories whose name holds search (any case) and
// that have a .gguf file when filter=gguf, sorted by sort descending, at most limit.
func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request) {
	switch SearchFault(s.browse.fault.Load()) {
	case SearchHang:
		<-r.Context().Done()
		return
	case SearchGarbage:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("<html>this is not json"))
		return
	case SearchHuge:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("["))
		chunk := []byte(strings.Repeat(`{"id":"a/b","downloads":1},`, 1000))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		return
	}
	q := r.URL.Query()
	text := strings.ToLower(q.Get("search"))
	s.mu.Lock()
	var out []searchEntry
	for repo, files := range s.repos {
		if text != "" && !strings.Contains(strings.ToLower(repo), text) {
			continue
		}
		hasGGUF := false
		for p := range files {
			hasGGUF = hasGGUF || strings.HasSuffix(strings.ToLower(p), ".gguf")
		}
		if q.Get("filter") == "gguf" && !hasGGUF {
			continue
		}
		in := s.browse.info[repo]
		e := searchEntry{ID: repo, Author: in.Author, Downloads: in.Downloads, Likes: in.Likes, Trending: in.Trending,
			Tags: []string{"gguf"}, Gated: false}
		if e.Author == "" {
			e.Author, _, _ = strings.Cut(repo, "/")
		}
		if !in.LastModified.IsZero() {
			e.LastModified = in.LastModified.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		if in.License != "" {
			e.Tags = append(e.Tags, "license:"+in.License)
		}
		if in.Gated {
			e.Gated = "manual"
		}
		if in.Parameters > 0 {
			e.GGUF = &struct {
				Total int64 `json:"total"`
			}{in.Parameters}
		}
		out = append(out, e)
	}
	s.mu.Unlock()
	key := func(e searchEntry) int64 { return e.Downloads }
	if q.Get("sort") == "trendingScore" {
		key = func(e searchEntry) int64 { return e.Trending }
	}
	slices.SortFunc(out, func(a, b searchEntry) int {
		if c := key(b) - key(a); c != 0 {
			return int(max(-1, min(1, c)))
		}
		return strings.Compare(a.ID, b.ID)
	})
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 0 && n < len(out) {
		out = out[:n]
	}
	if out == nil {
		out = []searchEntry{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
