package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestBundledModelIsTheKnownFile(t *testing.T) {
	sum := sha256.Sum256(BundledModel)
	if got := hex.EncodeToString(sum[:]); got != BundledModelSHA256 {
		t.Fatalf("bundled model sha256 %s, want %s", got, BundledModelSHA256)
	}
	if len(Icon) < 8 || string(Icon[1:4]) != "PNG" {
		t.Fatal("icon is not a PNG")
	}
}
