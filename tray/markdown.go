package tray

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// mdBlock is one block of a reply as the playground draws it: prose (fyne's markdown), a
// fenced code block (highlighted, with Copy) or a table (a grid). fyne's RichText parses the
// prose; the code and tables it cannot draw are cut out first, line by line.
type mdBlock struct {
	kind   mdKind
	text   string     // prose, or the code
	lang   string     // a code block's language ("" when the fence names none)
	closed bool       // reports whether a code block's fence was closed (a reply still streaming may not be)
	rows   [][]string // a table's cells, the header row first
}

type mdKind int

const (
	mdProse mdKind = iota
	mdCode
	mdTable
)

var tableRule = regexp.MustCompile(`^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$`)

// splitMarkdown cuts src into blocks. An unclosed fence runs to the end of src, so a code block
// being streamed grows in place instead of turning the rest of the reply into prose.
func splitMarkdown(src string) []mdBlock {
	lines := strings.Split(src, "\n")
	var out []mdBlock
	var prose []string
	flush := func() {
		if text := strings.Join(prose, "\n"); strings.TrimSpace(text) != "" {
			out = append(out, mdBlock{kind: mdProse, text: text})
		}
		prose = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence := fenceOf(trimmed); fence != "" {
			flush()
			b := mdBlock{kind: mdCode, lang: strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1]))}
			var code []string
			for i++; i < len(lines); i++ {
				if t := strings.TrimSpace(lines[i]); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
					b.closed = true
					break
				}
				code = append(code, lines[i])
			}
			b.text = strings.Join(code, "\n")
			out = append(out, b)
			continue
		}
		if strings.Contains(trimmed, "|") && i+1 < len(lines) && tableRule.MatchString(lines[i+1]) {
			flush()
			b := mdBlock{kind: mdTable, rows: [][]string{tableCells(trimmed)}}
			for i += 2; i < len(lines) && strings.Contains(lines[i], "|"); i++ {
				b.rows = append(b.rows, tableCells(strings.TrimSpace(lines[i])))
			}
			i--
			out = append(out, b)
			continue
		}
		prose = append(prose, line)
	}
	flush()
	return out
}

// fenceOf is the fence a line opens (``` or ~~~, three or more), or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(line, c+c+c) {
			n := len(line) - len(strings.TrimLeft(line, c))
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// tableCells are one table row's cells, its outer pipes dropped.
func tableCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// markdownView draws a reply. Links open with the app's OpenURL (fyne's default for a
// hyperlink) when they are http or https; any other link, raw HTML and images are shown as
// text: a reply is the model's, and nothing in it may run, open a file or fetch from the net.
func markdownView(src string, copyCode func(string)) fyne.CanvasObject {
	box := container.NewVBox()
	blocks := splitMarkdown(src)
	left := maxReplyBytes
	for i, b := range blocks {
		if i == maxReplyBlock || left <= 0 {
			box.Add(noteLabel(fmt.Sprintf("%d more blocks not shown: export the conversation to read it all.", len(blocks)-i)))
			break
		}
		limit := min(maxTextBytes, left)
		switch b.kind {
		case mdCode:
			view, drawn := codeBlockView(b, copyCode, limit)
			box.Add(view)
			left -= drawn
		case mdTable:
			view, cells := tableView(b.rows)
			box.Add(view)
			left -= cells * cellCost
		default:
			shown, more := capText(b.text, 0, limit)
			left -= len(shown)
			box.Add(proseView(shown))
			if shown != b.text {
				box.Add(cutNote(more, "export the conversation to read it all"))
			}
		}
	}
	return box
}

// proseView is markdown prose as a RichText, made safe (safeSegments).
func proseView(text string) *widget.RichText {
	rt := widget.NewRichText(proseSegments(text)...)
	rt.Wrapping = fyne.TextWrapWord
	return rt
}

// proseSegments parses prose with fyne's markdown, HTML kept as text (fyne would drop it).
func proseSegments(text string) []widget.RichTextSegment {
	return safeSegments(widget.NewRichTextFromMarkdown(strings.ReplaceAll(text, "<", ltMark)).Segments)
}

// ltMark stands for < while markdown parses prose, so no tag is read as HTML (fyne's markdown
// drops HTML: a reply's "<script>" would vanish, not show); safeSegments puts < back.
const ltMark = "\uE000"

// safeSegments replaces links that are not http(s) and every image with plain text (an image's
// address or title: it is never fetched).
func safeSegments(segs []widget.RichTextSegment) []widget.RichTextSegment {
	out := make([]widget.RichTextSegment, 0, len(segs))
	lt := strings.NewReplacer(ltMark, "<")
	for _, s := range segs {
		switch t := s.(type) {
		case *widget.TextSegment:
			t.Text = lt.Replace(t.Text)
		case *widget.HyperlinkSegment:
			t.Text = lt.Replace(t.Text)
			if !webLink(t.URL) {
				out = append(out, &widget.TextSegment{Text: t.Text, Style: widget.RichTextStyleInline})
				continue
			}
		case *widget.ImageSegment:
			name := t.Title
			if name == "" && t.Source != nil {
				name = t.Source.String()
			}
			out = append(out, &widget.TextSegment{Text: "[image: " + lt.Replace(name) + "]", Style: widget.RichTextStyleInline})
			continue
		case *widget.ParagraphSegment:
			t.Texts = safeSegments(t.Texts)
		case *widget.ListSegment:
			t.Items = safeSegments(t.Items)
		}
		out = append(out, s)
	}
	return out
}

// webLink reports whether u is an absolute http or https URL.
func webLink(u *url.URL) bool {
	return u != nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// tableView is a markdown table as a grid, its header bold; short rows are padded. Past
// maxTableRows rows or maxTableCols columns it draws the first ones and says so.
func tableView(rows [][]string) (fyne.CanvasObject, int) {
	all := 0
	for _, r := range rows {
		all = max(all, len(r))
	}
	cols, shown := min(all, maxTableCols), rows[:min(len(rows), maxTableRows+1)]
	grid := container.NewGridWithColumns(cols)
	long := false // a cell was cut: one of a megabyte, wrapped, would take the window minutes
	for i, r := range shown {
		for c := 0; c < cols; c++ {
			cell := ""
			if c < len(r) {
				cell = r[c]
			}
			if cut, _ := capText(cell, 0, maxCellBytes); cut != cell {
				cell, long = cut+"…", true
			}
			segs := proseSegments(cell)
			if i == 0 {
				segs = boldSegments(segs)
			}
			rt := widget.NewRichText(segs...)
			rt.Wrapping = fyne.TextWrapWord
			grid.Add(rt)
		}
	}
	out := container.NewVBox(grid)
	if len(shown) < len(rows) || cols < all || long {
		cells := ""
		if long {
			cells = ", long cells cut"
		}
		out.Add(noteLabel(fmt.Sprintf("Showing %d of %d rows and %d of %d columns%s: export the conversation for the whole table.",
			len(shown)-1, len(rows)-1, cols, all, cells)))
	}
	out.Add(widget.NewSeparator())
	return out, len(grid.Objects)
}

// boldSegments makes a header cell's text bold.
func boldSegments(segs []widget.RichTextSegment) []widget.RichTextSegment {
	for _, s := range segs {
		switch t := s.(type) {
		case *widget.TextSegment:
			t.Style.TextStyle.Bold = true
		case *widget.ParagraphSegment:
			boldSegments(t.Texts)
		}
	}
	return segs
}
