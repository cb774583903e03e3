package supervise

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLogFileRotatesAndKeepsTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lane.log")
	l, err := openLogFile(path, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 20; i++ {
		l.Write([]byte(strings.Repeat("x", 10) + "\n"))
	}
	l.Write([]byte("one\ntw"))
	l.Write([]byte("o\r\nthr"))
	if got, want := l.Tail(), []string{"one", "two", "thr"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tail() = %q, want %q", got, want)
	}
	cur, err1 := os.Stat(path)
	old, err2 := os.Stat(path + ".1")
	if err1 != nil || err2 != nil {
		t.Fatalf("want the log and one rotated file: %v, %v", err1, err2)
	}
	if cur.Size() > 100 || old.Size() > 100 {
		t.Errorf("files past the cap: %d and %d bytes", cur.Size(), old.Size())
	}
	// A long line without a newline is capped in memory (the file has it all).
	l.Write([]byte(strings.Repeat("y", 3*maxLineBytes)))
	if tail := l.Tail(); len(tail[len(tail)-1]) > maxLineBytes {
		t.Errorf("the kept line is %d bytes, past the %d cap", len(tail[len(tail)-1]), maxLineBytes)
	}
}
