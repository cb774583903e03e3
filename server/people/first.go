package people

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// FirstAdminName is the name of the admin team mode creates at its first start.
const FirstAdminName = "admin"

// EnsureFirstAdmin creates the first admin, named FirstAdminName, when nobody exists yet:
// with the password in passwordFile (its first line) or, with no file, a random one that is
// returned (to be shown once). created is false when people exist already; nothing changes
// then, whatever the file holds.
func (s *Service) EnsureFirstAdmin(ctx context.Context, passwordFile string) (p Person, password string, created bool, err error) {
	all, err := s.st.People(ctx)
	if err != nil || len(all) > 0 {
		return Person{}, "", false, err
	}
	generated := passwordFile == ""
	if generated {
		password = GeneratePassword()
	} else if password, err = ReadPasswordFile(passwordFile); err != nil {
		return Person{}, "", false, err
	}
	p, err = s.Create(ctx, Actor{Via: "serve"}, NewPerson{Name: FirstAdminName, Password: password, Role: RoleAdmin})
	if err != nil {
		return Person{}, "", false, err
	}
	if !generated {
		password = "" // the caller knows it: nothing to show
	}
	return p, password, true, nil
}

// ReadPasswordFile reads a password from the first line of a file (a final newline is not part
// of it).
func ReadPasswordFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the password file: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if err := checkNewPassword(line); err != nil {
		return "", fmt.Errorf("the password file %s: %w", path, err)
	}
	return line, nil
}
