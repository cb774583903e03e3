package websession

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the per-install token's file name in the data dir.
const TokenFile = "web-token"

// LoadToken returns the token kept in dir/web-token, creating it once (32 random bytes, hex,
// mode 0600). A file another user could read, or one that is not a plain file, is replaced by
// a new token: the old one may be known.
func LoadToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		tok := hex.EncodeToString(b)
		_, werr := f.WriteString(tok + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return "", fmt.Errorf("web token: %w", werr)
		}
		return tok, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("web token: %w", err)
	}
	if st, err := os.Lstat(path); err == nil && (st.Mode().Perm()&0o077 != 0 || !st.Mode().IsRegular()) {
		// Another user could have read it (or it is not our file): its token is spent. A new
		// one replaces it; the page the app opens next carries that one.
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("web token: %w", err)
		}
		return LoadToken(dir)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 {
		return "", fmt.Errorf("web token: %s holds no token (delete it to make a new one)", path)
	}
	return tok, nil
}
