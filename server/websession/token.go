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
// mode 0600). A file another user could read is tightened to 0600 first.
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
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("web token: %w", err)
		}
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
