package tray

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// codeBlockView is a fenced code block: its language and a Copy button over the code,
// highlighted, on the input background; it draws at most limit bytes of it, and says how many.
func codeBlockView(b mdBlock, copyCode func(string), limit int) (fyne.CanvasObject, int) {
	shown, more := capText(b.text, maxCodeLines, limit)
	code := widget.NewRichText(highlight(b.lang, shown)...)
	code.Wrapping = fyne.TextWrapBreak // long lines wrap instead of widening the window
	copyButton := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), nil)
	copyButton.Importance = widget.LowImportance
	copyButton.OnTapped = func() {
		copyCode(b.text)
		copyButton.SetText("Copied")
	}
	lang := b.lang
	if lang == "" {
		lang = "code"
	}
	header := container.NewBorder(nil, nil,
		widget.NewLabelWithStyle(lang, fyne.TextAlignLeading, fyne.TextStyle{Italic: true}), copyButton)
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	var note fyne.CanvasObject
	if shown != b.text {
		note = cutNote(more, "Copy copies the whole block")
	}
	return container.NewStack(bg, container.NewBorder(header, note, nil, nil, code)), len(shown)
}

// highlight colours code by its language's lexer (chroma's; guessed from the code when the
// fence names none or one chroma does not know) with the theme's own colours, so it reads in
// light and dark alike.
func highlight(lang, code string) []widget.RichTextSegment {
	lexer := lexers.Get(lang)
	if lexer == nil {
		lexer = lexers.Analyse(code)
	}
	if lexer == nil {
		lexer = lexers.Fallback
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return []widget.RichTextSegment{codeSegment(code, theme.ColorNameForeground)}
	}
	var segs []widget.RichTextSegment
	for _, tok := range it.Tokens() {
		if tok.Value == "" {
			continue
		}
		segs = append(segs, codeSegment(tok.Value, tokenColor(tok.Type)))
	}
	// chroma ends the last line with a newline the code did not have.
	if n := len(segs); n > 0 && !strings.HasSuffix(code, "\n") {
		last := segs[n-1].(*widget.TextSegment)
		last.Text = strings.TrimSuffix(last.Text, "\n")
		if last.Text == "" {
			segs = segs[:n-1]
		}
	}
	return segs
}

func codeSegment(text string, color fyne.ThemeColorName) *widget.TextSegment {
	return &widget.TextSegment{Text: text, Style: widget.RichTextStyle{Inline: true, ColorName: color,
		TextStyle: fyne.TextStyle{Monospace: true}, SizeName: theme.SizeNameText}}
}

// tokenColor is the theme colour of a kind of token.
func tokenColor(t chroma.TokenType) fyne.ThemeColorName {
	switch {
	case t.InCategory(chroma.Keyword), t == chroma.NameBuiltin, t == chroma.NameTag:
		return theme.ColorNamePrimary
	case t.InCategory(chroma.LiteralString):
		return theme.ColorNameSuccess
	case t.InCategory(chroma.LiteralNumber), t == chroma.NameConstant:
		return theme.ColorNameWarning
	case t.InCategory(chroma.Comment):
		return theme.ColorNamePlaceHolder
	case t == chroma.NameFunction, t == chroma.NameClass, t == chroma.NameAttribute:
		return theme.ColorNameHyperlink
	case t == chroma.Error:
		return theme.ColorNameError
	}
	return theme.ColorNameForeground
}
