package hf

import (
	"path"
	"strings"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// pickProjector is the multimodal projector (an mmproj GGUF) that goes with the model files of
// a repository: among the repository's mmproj files (those in the model's folder when there
// are any), source.RankProjectors' first for the model's quantization. nil when the
// repository has none, or when what was asked for is itself a projector.
func pickProjector(files []RemoteFile, entries []treeEntry) *RemoteFile {
	if len(files) == 0 || source.IsProjectorName(files[0].Path) {
		return nil
	}
	modelDir := path.Dir(files[0].Path)
	byPath := map[string]RemoteFile{}
	var near, far []string
	for _, e := range entries {
		if e.Type != "file" || !safeRepoPath(e.Path) || !source.IsProjectorName(e.Path) {
			continue
		}
		f := e.remoteFile()
		byPath[e.Path] = f
		if path.Dir(e.Path) == modelDir {
			near = append(near, e.Path)
		} else {
			far = append(far, e.Path)
		}
	}
	cands := near
	if len(cands) == 0 {
		cands = far
	}
	if len(cands) == 0 {
		return nil
	}
	base := path.Base(files[0].Path)
	stem := strings.TrimSuffix(base, path.Ext(base))
	if sm := splitRe.FindStringSubmatch(base); sm != nil {
		stem = sm[1]
	}
	best := byPath[source.RankProjectors(cands, quantLabel(stem, modelDir))[0]]
	return &best
}
