package gguftest

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// FillF32 overwrites every element of the F32 tensor name in the GGUF file at path with v, in
// place: a test model with broken weights (NaN, so that no logit is finite) from a good one.
func FillF32(path, name string, v float32) error {
	f, err := gguf.ReadFile(path)
	if err != nil {
		return err
	}
	t, ok := f.Tensor(name)
	if !ok || t.Type != gguf.TypeF32 {
		return fmt.Errorf("%s: no F32 tensor %s", path, name)
	}
	data := make([]byte, t.Size)
	for i := 0; i+4 <= len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(v))
	}
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := file.WriteAt(data, f.DataOffset+int64(t.Offset)); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
