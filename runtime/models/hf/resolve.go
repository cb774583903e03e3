package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// RemoteFile is one file in a Hub repository.
type RemoteFile struct {
	Path   string // path inside the repository
	Size   int64
	SHA256 string // lower-case hex from the LFS pointer; "" when the file is not in LFS
}

// Resolved is a reference resolved to the files to download.
type Resolved struct {
	Ref      Ref
	Revision string       // the revision used (X-Repo-Commit when given, else the requested one)
	Files    []RemoteFile // one file, or all parts of a split GGUF in part order
	// Projector is the repository's multimodal projector for the model (pickProjector), nil
	// for none.
	Projector *RemoteFile
	// name is the reference (without revision) that names exactly the resolved model
	// (refFor); "" when it is no model of the repository's (a projector asked for by file).
	name string
}

// treeEntry is one entry of the Hub's tree listing.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	Oid  string `json:"oid"`
	LFS  *struct {
		Oid  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// maxPages bounds the tree listing's pagination.
const maxPages = 1000

// Resolve lists ref's repository and picks the GGUF file(s) it names: the
// given file (all parts when split), the given quant, or the default (Q4_K_M,
// or the only model in the repository).
func (c *Client) Resolve(ctx context.Context, ref Ref) (*Resolved, error) {
	if ref.Repo == "" {
		return nil, fmt.Errorf("resolve: empty repository: %w", ErrBadRef)
	}
	entries, err := c.listTree(ctx, ref)
	if err != nil {
		return nil, err
	}
	files, err := pick(ref, entries)
	if err != nil {
		return nil, err
	}
	res := &Resolved{Ref: ref, Revision: ref.revision(), Files: files, Projector: pickProjector(files, entries)}
	if models, err := groupModels(ref, repoGGUFs(entries)); err == nil {
		for _, m := range models {
			if m.parts[0].Path == files[0].Path {
				res.name = refFor(Ref{Repo: ref.Repo}, models, m)
			}
		}
	}
	// Pin the revision to a commit, so every part (and every resume) comes
	// from the same snapshot.
	commit, err := c.headCommit(ctx, ref, files[0].Path)
	if err != nil {
		return nil, err
	}
	if commit != "" {
		// The commit names the folder the files are written to: only a full commit id is
		// taken, never a path ("../..") a hostile or broken endpoint might answer.
		if !IsCommit(commit) {
			return nil, fmt.Errorf("resolve %s: the endpoint answered X-Repo-Commit %s, which is not a 40-hex commit id; check --hf-endpoint: %w",
				ref.Repo, quoteShort(commit), ErrBadAnswer)
		}
		res.Revision = strings.ToLower(commit)
	}
	return res, nil
}

// IsCommit reports whether s is a full git commit id: 40 hex digits.
func IsCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// listTree fetches the recursive tree listing, following Link rel="next".
func (c *Client) listTree(ctx context.Context, ref Ref) ([]treeEntry, error) {
	what := "list " + ref.Repo
	u := c.endpoint + "/api/models/" + ref.Repo + "/tree/" + url.PathEscape(ref.revision()) + "?recursive=true"
	var all []treeEntry
	for page := 0; u != ""; page++ {
		if page >= maxPages {
			return nil, fmt.Errorf("%s: more than %d pages", what, maxPages)
		}
		var next string
		var r retrier
		r.c = c
		for {
			var entries []treeEntry
			var err error
			entries, next, err = c.listPage(ctx, what, u)
			if err == nil {
				all = append(all, entries...)
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err := r.wait(ctx, err); err != nil {
				return nil, err
			}
		}
		u = next
	}
	return all, nil
}

// listPage fetches one page of the listing and returns its entries and the
// next page's URL ("" when last).
func (c *Client) listPage(ctx context.Context, what, u string) ([]treeEntry, string, error) {
	a, err := c.do(ctx, http.MethodGet, u, http.Header{"Accept": {"application/json"}}, true)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", what, err)
	}
	defer a.Close()
	if a.resp.StatusCode != http.StatusOK {
		return nil, "", statusError(what, a.resp)
	}
	var entries []treeEntry
	if err := json.NewDecoder(io.LimitReader(a, 64<<20)).Decode(&entries); err != nil {
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
			return nil, "", fmt.Errorf("%s: decode listing: %w", what, err)
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", &retryableError{err: fmt.Errorf("%s: read listing: %w", what, err)} // a reset, EOF or stall
	}
	next := ""
	if n := nextLink(a.resp.Header.Values("Link")); n != "" {
		nu, err := a.resp.Request.URL.Parse(n)
		if err != nil {
			return nil, "", fmt.Errorf("%s: bad Link header %q: %w", what, n, err)
		}
		next = nu.String()
	}
	return entries, next, nil
}

// nextLink returns the URL of the rel="next" entry of Link headers.
func nextLink(values []string) string {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			segs := strings.Split(part, ";")
			target := strings.TrimSpace(segs[0])
			if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range segs[1:] {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "rel") {
					for rel := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(v), `"`)) {
						if strings.EqualFold(rel, "next") {
							return target[1 : len(target)-1]
						}
					}
				}
			}
		}
	}
	return ""
}

// headCommit asks the resolve URL of p (without following the redirect) for
// X-Repo-Commit; "" when the server does not say.
func (c *Client) headCommit(ctx context.Context, ref Ref, p string) (string, error) {
	what := "check " + ref.Repo + "/" + p
	u := c.fileURL(ref.Repo, ref.revision(), p)
	r := retrier{c: c}
	for {
		a, err := c.do(ctx, http.MethodHead, u, nil, false)
		if err == nil {
			code := a.resp.StatusCode
			commit := a.resp.Header.Get("X-Repo-Commit")
			if code < 400 {
				a.Close()
				return commit, nil
			}
			err = statusError(what, a.resp)
			a.Close()
		} else {
			err = fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err := r.wait(ctx, err); err != nil {
			return "", err
		}
	}
}

// fileURL is the resolve URL of p at rev.
func (c *Client) fileURL(repo, rev, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
}

// model is one GGUF model of a repository: a single file or a split set.
type model struct {
	parts []RemoteFile // in part order
	quant string       // quant label for listings, e.g. "Q4_K_M", "UD-Q4_K_XL"
	stem  string       // file name without ".gguf" and split suffix
	dir   string       // directory inside the repository, "" at the top
}

var (
	splitRe = regexp.MustCompile(`(?i)^(.*)-(\d{5})-of-(\d{5})\.gguf$`)
	quantRe = regexp.MustCompile(`(?i)^(I?Q\d\w*|TQ\d\w*|F16|F32|F64|BF16|FP16|FP32|MXFP4\w*)$`)
)

// remoteFile is the tree entry as a file to download: its LFS size and digest when it has them.
func (e treeEntry) remoteFile() RemoteFile {
	f := RemoteFile{Path: e.Path, Size: e.Size}
	if e.LFS != nil {
		f.SHA256 = strings.ToLower(e.LFS.Oid)
		if e.LFS.Size > 0 {
			f.Size = e.LFS.Size
		}
	}
	return f
}

// pick chooses the files ref names among entries.
func pick(ref Ref, entries []treeEntry) ([]RemoteFile, error) {
	ggufs := repoGGUFs(entries)
	models, err := groupModels(ref, ggufs)
	if err != nil {
		return nil, err
	}
	if ref.File != "" {
		for _, m := range models {
			for _, p := range m.parts {
				if p.Path == ref.File {
					return m.parts, nil
				}
			}
		}
		for _, f := range ggufs { // an mmproj file asked for by name
			if f.Path == ref.File {
				return []RemoteFile{f}, nil
			}
		}
		return nil, fmt.Errorf("%s: no file %q; GGUF files in the repository: %s: %w",
			ref.Repo, ref.File, fileList(models), ErrNoMatch)
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("%s has no GGUF files; choose a repository that offers GGUF (often named ...-GGUF): %w", ref.Repo, ErrNoMatch)
	}
	if ref.Quant != "" {
		m, err := matchQuant(ref, models, ref.Quant)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%s has no %s quant; available: %s: %w",
				ref.Repo, ref.Quant, quantList(ref, models), ErrNoMatch)
		}
		return m.parts, nil
	}
	m, err := matchQuant(ref, models, "Q4_K_M")
	if err != nil {
		return nil, err
	}
	if m != nil {
		return m.parts, nil
	}
	if len(models) == 1 {
		return models[0].parts, nil
	}
	return nil, fmt.Errorf("%s has several GGUF models and no Q4_K_M; name one: %s: %w",
		ref.Repo, quantList(ref, models), ErrNoMatch)
}

// safeRepoPath reports whether p is a relative path without empty, "." or
// ".." segments, backslashes or control characters.
func safeRepoPath(p string) bool {
	if p == "" || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// groupModels groups GGUF files into models, skipping multimodal projectors
// and joining split parts.
func groupModels(ref Ref, files []RemoteFile) ([]*model, error) {
	var models []*model
	splits := map[string]*model{}
	for _, f := range files {
		dir, base := path.Split(f.Path)
		dir = strings.TrimSuffix(dir, "/")
		if source.IsProjectorName(base) {
			continue
		}
		if sm := splitRe.FindStringSubmatch(base); sm != nil {
			k, _ := strconv.Atoi(sm[2])
			n, _ := strconv.Atoi(sm[3])
			if k < 1 || n < 1 || k > n || n > 9999 {
				continue
			}
			key := path.Join(dir, sm[1]) + "/" + sm[3]
			m := splits[key]
			if m == nil {
				m = &model{parts: make([]RemoteFile, n), stem: sm[1], dir: dir}
				splits[key] = m
				models = append(models, m)
			}
			m.parts[k-1] = f
			continue
		}
		models = append(models, &model{parts: []RemoteFile{f}, stem: base[:len(base)-len(".gguf")], dir: dir})
	}
	for _, m := range models {
		for i, p := range m.parts {
			if p.Path == "" {
				return nil, fmt.Errorf("%s: split model %s is missing part %d of %d; the repository is incomplete: %w",
					ref.Repo, path.Join(m.dir, m.stem), i+1, len(m.parts), ErrNoMatch)
			}
		}
		m.quant = quantLabel(m.stem, m.dir)
	}
	return models, nil
}

// quantLabel extracts the quantization tag from a file stem: its last token
// that looks like one ("Q4_K_M", "IQ2_XXS", "F16", with a "UD-" prefix kept)
// and whatever follows it, or the directory name when it looks like one, or
// else the stem's last token.
func quantLabel(stem, dir string) string {
	tokens, seps := splitTokens(stem)
	for i := len(tokens) - 1; i >= 0; i-- {
		if quantRe.MatchString(tokens[i]) {
			if i > 0 && strings.EqualFold(tokens[i-1], "UD") {
				i--
			}
			var b strings.Builder
			for j := i; j < len(tokens); j++ {
				if j > i {
					b.WriteByte(seps[j-1])
				}
				b.WriteString(tokens[j])
			}
			return b.String()
		}
	}
	if d := path.Base(dir); dir != "" && quantRe.MatchString(d) {
		return d
	}
	return tokens[len(tokens)-1]
}

// splitTokens splits s at '-' and '.', returning the tokens and the
// separator after each (one fewer than tokens).
func splitTokens(s string) ([]string, []byte) {
	var tokens []string
	var seps []byte
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '-' || s[i] == '.' {
			tokens = append(tokens, s[start:i])
			seps = append(seps, s[i])
			start = i + 1
		}
	}
	return append(tokens, s[start:]), seps
}

// matchQuant returns the model whose quant is q (case-insensitive), or nil.
// An exact label match wins; otherwise a stem ending in "-q" or ".q", or a
// directory named q, matches. More than one candidate is an error.
func matchQuant(ref Ref, models []*model, q string) (*model, error) {
	var exact, loose []*model
	lq := strings.ToLower(q)
	for _, m := range models {
		stem := strings.ToLower(m.stem)
		switch {
		case strings.EqualFold(m.quant, q):
			exact = append(exact, m)
		case stem == lq || strings.HasSuffix(stem, "-"+lq) || strings.HasSuffix(stem, "."+lq):
			loose = append(loose, m)
		case slices.ContainsFunc(strings.Split(m.dir, "/"), func(d string) bool { return strings.EqualFold(d, q) }):
			loose = append(loose, m)
		}
	}
	cands := exact
	if len(cands) == 0 {
		cands = loose
	}
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return cands[0], nil
	}
	return nil, fmt.Errorf("%s: %s matches several models (%s); name the file: %w",
		ref.Repo, q, fileList(cands), ErrNoMatch)
}

// quantList lists the models as references a user can type.
func quantList(ref Ref, models []*model) string {
	seen := map[string]bool{}
	var out []string
	for _, m := range models {
		if !seen[strings.ToLower(m.quant)] {
			seen[strings.ToLower(m.quant)] = true
			out = append(out, m.quant)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return strings.Join(out, ", ") + " (e.g. " + Ref{Repo: ref.Repo, Revision: ref.Revision, Quant: out[0]}.String() + ")"
}

// fileList lists the models' first parts.
func fileList(models []*model) string {
	if len(models) == 0 {
		return "none"
	}
	var out []string
	for _, m := range models {
		out = append(out, m.parts[0].Path)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// Quant is the quantization tag of the resolved model's file name ("Q4_K_M", "UD-Q4_K_XL"), as
// the repository spells it.
func (r *Resolved) Quant() string {
	if len(r.Files) == 0 {
		return ""
	}
	dir, base := path.Split(r.Files[0].Path)
	stem := strings.TrimSuffix(base, path.Ext(base))
	if sm := splitRe.FindStringSubmatch(base); sm != nil {
		stem = sm[1]
	}
	return quantLabel(stem, strings.TrimSuffix(dir, "/"))
}

// repoGGUFs are the listing's GGUF files at safe paths.
func repoGGUFs(entries []treeEntry) []RemoteFile {
	var ggufs []RemoteFile
	for _, e := range entries {
		if e.Type == "file" && strings.HasSuffix(strings.ToLower(e.Path), ".gguf") && safeRepoPath(e.Path) {
			ggufs = append(ggufs, e.remoteFile())
		}
	}
	return ggufs
}

// refFor is the reference that resolves to exactly m among the repository's models: ref with
// m's quant when that quant picks m alone (the same rule pick follows), else ref with m's first
// file (same-named quants in several folders: "Q4_K_M/model.gguf" and
// "other/model-Q4_K_M.gguf"); "" when neither reads back as a reference naming m.
func refFor(ref Ref, models []*model, m *model) string {
	q := ref
	q.Quant, q.File = m.quant, ""
	if validName(m.quant) && !strings.EqualFold(m.quant, "latest") {
		if got, err := matchQuant(q, models, m.quant); err == nil && got == m {
			return q.String()
		}
	}
	f := ref
	f.Quant, f.File = "", m.parts[0].Path
	if back, err := ParseRef(f.String()); err == nil && back == f {
		return f.String()
	}
	return ""
}
