package people

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's costs. DefaultHashParams is what every server uses; a lower cost
// is for tests only (Config.Hash), since the cost is what slows down guessing from a stolen
// database.
type HashParams struct {
	// Memory in KiB, Time the passes, Threads the lanes.
	Memory  uint32
	Time    uint32
	Threads uint8
}

// DefaultHashParams follow OWASP's argon2id recommendation (19 MiB, 2 passes, 1 lane): about
// 20 ms a hash on a laptop core, and the memory makes GPU guessing dear.
var DefaultHashParams = HashParams{Memory: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	hashLen = 32
)

// Password length bounds: short ones are guessable; the upper bound keeps one sign-in from
// costing the server much more than another.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// hashPassword returns the PHC string of password: $argon2id$v=19$m=M,t=T,p=P$SALT$HASH with
// the salt and hash in unpadded base64, so the costs travel with the hash and can be raised
// later without breaking old passwords.
func hashPassword(password string, p HashParams) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // never fails
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, hashLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum))
}

// errBadHash is a stored hash this code cannot read.
var errBadHash = errors.New("not an argon2id PHC string")

// checkPassword reports whether password matches the PHC string phc, comparing in constant
// time.
func checkPassword(password, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil ||
		p.Memory == 0 || p.Time == 0 || p.Threads == 0 || p.Memory > 4<<20 || p.Time > 100 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 || len(want) > 128 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// GeneratePassword returns a random password: 24 characters of unpadded base64url (144 bits).
func GeneratePassword() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// checkNewPassword accepts a password to store.
func checkNewPassword(password string) error {
	switch {
	case password == "":
		return fmt.Errorf("%w: the password is empty", ErrInvalid)
	case len(password) < MinPasswordLen:
		return fmt.Errorf("%w: a password has at least %d characters, got %d", ErrInvalid, MinPasswordLen, len(password))
	case len(password) > MaxPasswordLen:
		return fmt.Errorf("%w: a password has at most %d bytes", ErrInvalid, MaxPasswordLen)
	}
	return nil
}
