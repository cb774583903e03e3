package tray

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// What one turn draws at most. Every cell, block and segment is a widget laid out again on
// each redraw (a streamed reply redraws with every piece), so a 2,000 × 50 table or a 5 MB code
// block, from a model or an imported conversation, would freeze the window; past these the
// turn says what it left out. Copy and Export keep the whole text.
const (
	maxTableRows  = 50 // a table's rows after its header
	maxTableCols  = 12
	maxCodeLines  = 200
	maxTextBytes  = 8 << 10  // a code block's, a prose block's or a plain turn's text
	maxReplyBytes = 32 << 10 // all of a reply's blocks, a table's cells cellCost each
	maxReplyBlock = 100      // blocks (prose, code, tables) of one reply
	cellCost      = 32
	maxCellBytes  = 256 // a table cell's text
)

// capText is s cut to at most maxLines lines (0: any) and maxBytes bytes, on a rune boundary,
// and how many lines were left out (-1 when cut inside the last line shown).
func capText(s string, maxLines, maxBytes int) (string, int) {
	total := strings.Count(s, "\n") + 1
	cut := s
	if maxLines > 0 && total > maxLines {
		i := 0
		for n := 0; n < maxLines; n++ {
			i += strings.IndexByte(cut[i:], '\n') + 1
		}
		cut = cut[:i-1]
	}
	if len(cut) > maxBytes {
		i := maxBytes
		for i > 0 && !utf8.RuneStart(cut[i]) {
			i--
		}
		cut = cut[:i]
		if nl := strings.LastIndexByte(cut, '\n'); nl > 0 {
			cut = cut[:nl]
		}
	}
	if cut == s {
		return s, 0
	}
	return cut, total - (strings.Count(cut, "\n") + 1)
}

// cutNote is the line under a cut text: how much more there is, and where to read it.
func cutNote(lines int, where string) fyne.CanvasObject {
	what := fmt.Sprintf("%d more lines not shown", lines)
	if lines <= 0 {
		what = "The rest of this text is not shown"
	}
	return noteLabel(what + ": " + where + ".")
}

func noteLabel(text string) *widget.Label {
	l := widget.NewLabelWithStyle("… "+text, fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
	l.Importance = widget.LowImportance
	l.Wrapping = fyne.TextWrapWord
	return l
}

// plainTurnText is a user's words or a card's body, cut: a RichText of one segment, with a note
// when it was cut.
func plainTurnText(text string, seg func(string) widget.RichTextSegment, wrap fyne.TextWrap) (*widget.RichText, fyne.CanvasObject) {
	shown, more := capText(text, 0, maxTextBytes)
	rt := widget.NewRichText(seg(shown))
	rt.Wrapping = wrap
	if shown == text {
		return rt, nil
	}
	return rt, cutNote(more, "export the conversation to read it all")
}
