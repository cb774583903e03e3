package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
)

// encodeKV is the file of ent with payload (the layout is above kvMagic in kvstore.go).
func encodeKV(ent *kvEntry, payload []byte) []byte {
	var b bytes.Buffer
	b.Grow(64 + len(ent.model) + len(ent.settings) + len(ent.partition) + 4*len(ent.tokens) + len(payload))
	b.WriteString(kvMagic)
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le(uint32(kvVersion))
	for _, s := range []string{ent.model, ent.settings, ent.partition} {
		le(uint32(len(s)))
		b.WriteString(s)
	}
	le(uint32(len(ent.tokens)))
	for _, t := range ent.tokens {
		le(int32(t))
	}
	le(uint64(len(payload)))
	b.Write(payload)
	le(crc32.Checksum(b.Bytes(), crc32c))
	return b.Bytes()
}

// kvHeader reads a file's header from r; the file is size bytes long. It checks that the
// lengths add up to the size, not the checksum (readKV does).
func kvHeader(r io.Reader, size int64) (*kvEntry, int64, error) {
	bad := func(what string) error { return fmt.Errorf("%w: %s", errKVFile, what) }
	var magic [8]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || string(magic[:]) != kvMagic {
		return nil, 0, bad("no magic")
	}
	var version uint32
	if binary.Read(r, binary.LittleEndian, &version) != nil {
		return nil, 0, bad("truncated")
	}
	if version > kvVersion {
		return nil, 0, fmt.Errorf("%w: version %d, this build reads %d", errKVNewer, version, kvVersion)
	}
	if version != kvVersion {
		return nil, 0, bad("old version")
	}
	read := int64(12)
	var strs [3]string
	for i := range strs {
		var n uint32
		if binary.Read(r, binary.LittleEndian, &n) != nil || n > kvMaxString {
			return nil, 0, bad("truncated header")
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, 0, bad("truncated header")
		}
		strs[i] = string(buf)
		read += 4 + int64(n)
	}
	var count uint32
	if binary.Read(r, binary.LittleEndian, &count) != nil || int64(count)*4 > size-read {
		return nil, 0, bad("truncated tokens")
	}
	raw := make([]int32, count)
	if binary.Read(r, binary.LittleEndian, raw) != nil {
		return nil, 0, bad("truncated tokens")
	}
	read += 4 + 4*int64(count)
	var payload uint64
	if binary.Read(r, binary.LittleEndian, &payload) != nil {
		return nil, 0, bad("truncated")
	}
	read += 8
	if payload == 0 || int64(payload) != size-read-4 {
		return nil, 0, bad(fmt.Sprintf("%d bytes long, the header says %d", size, read+int64(payload)+4))
	}
	tokens := make([]int, count)
	for i, t := range raw {
		tokens[i] = int(t)
	}
	return &kvEntry{model: strs[0], settings: strs[1], partition: strs[2], tokens: tokens, size: size}, read, nil
}

func readKVHeader(path string) (*kvEntry, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ent, _, err := kvHeader(bufio.NewReader(f), st.Size())
	if err != nil {
		return nil, err
	}
	ent.name = filepath.Base(path)
	return ent, nil
}
