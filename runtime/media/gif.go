package media

// checkGIFFrames refuses a GIF holding more than max frames. It walks the file's blocks,
// counting image descriptors and skipping every data sub-block unread, so a GIF of 10,000
// frames costs a scan of its bytes, never a decode. A malformed or truncated tail ends the
// count: the decoder, which reads only the first frame, reports what is wrong with that.
func checkGIFFrames(data []byte, max int) error {
	const header, screen = 6, 7
	if len(data) < header+screen {
		return nil
	}
	pos := header + screen
	if packed := data[header+4]; packed&0x80 != 0 {
		pos += 3 << (packed&7 + 1) // the global color table
	}
	frames := 0
	for pos < len(data) {
		switch data[pos] {
		case 0x21: // extension: label, then sub-blocks
			pos = skipSubBlocks(data, pos+2)
		case 0x2C: // image descriptor: 9 bytes, a local color table, the LZW code size, sub-blocks
			frames++
			if frames > max {
				return tooLarge("the GIF has more than %d frames; the limit is %d (only the first is used: send it as a still image)", max, max)
			}
			if pos+10 > len(data) {
				return nil
			}
			packed := data[pos+9]
			pos += 10
			if packed&0x80 != 0 {
				pos += 3 << (packed&7 + 1)
			}
			pos = skipSubBlocks(data, pos+1)
		default: // the trailer (0x3B) or damage
			return nil
		}
	}
	return nil
}

// skipSubBlocks returns the position after the run of data sub-blocks starting at pos (each a
// length byte and that many bytes, ended by a zero length), or len(data) when it runs off the
// end.
func skipSubBlocks(data []byte, pos int) int {
	for pos < len(data) {
		n := int(data[pos])
		pos++
		if n == 0 {
			return pos
		}
		pos += n
	}
	return len(data)
}
