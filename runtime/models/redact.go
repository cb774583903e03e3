package models

import (
	"path/filepath"
	"strings"
)

// pathless is an error whose text names model files by their base name only: load failures
// reach every caller of a model, and a key that is not an admin must not learn where the
// server keeps its files (the log keeps the full error). errors.Is and As still see the cause.
type pathless struct {
	err error
	msg string
}

func (e *pathless) Error() string { return e.msg }
func (e *pathless) Unwrap() error { return e.err }

// withoutPaths returns err with the folder of path, and the models folder, cut from its text.
func withoutPaths(err error, path string, modelsDir string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, dir := range []string{filepath.Dir(path), modelsDir} {
		if dir == "" || dir == "." || dir == string(filepath.Separator) {
			continue
		}
		msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, dir, filepath.Base(dir))
	}
	if msg == err.Error() {
		return err
	}
	return &pathless{err: err, msg: msg}
}
