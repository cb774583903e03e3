package tray

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// discoverTimeout bounds one search or listing as the tab waits for it.
const discoverTimeout = 20 * time.Second

// discoverView is the Discover tab: search the Hub, pick a repository, see which of its
// quantizations fit this machine, download one (through the Models tab's download row) or
// read its model card.
type discoverView struct {
	app     *App
	search  *widget.Entry
	sort    *widget.Select
	status  *widget.Label // "Searching…", "12 models", or why the Hub is out of reach
	results *fyne.Container

	repo     string // the repository shown on the right; "" before one is picked
	title    *widget.Label
	context  *widget.Select
	lanes    *widget.Select
	quants   *widget.RadioGroup
	byLabel  map[string]HubQuant
	note     *widget.Label
	download *widget.Button
	card     *widget.Button
	cardText *widget.RichText // the open card (tests)
	cardCut  *widget.Label    // its note when it was cut short (tests)

	content fyne.CanvasObject
}

var sortNames = map[string]string{"Most downloads": SortDownloads, "Trending": SortTrending}

func newDiscoverView(a *App) *discoverView {
	v := &discoverView{app: a, results: container.NewVBox(), byLabel: map[string]HubQuant{}}
	v.search = widget.NewEntry()
	v.search.SetPlaceHolder("Search Hugging Face for GGUF models (llama, qwen, gemma…)")
	v.search.OnSubmitted = func(string) { v.runSearch() }
	v.sort = widget.NewSelect([]string{"Most downloads", "Trending"}, func(string) { v.runSearch() })
	v.sort.SetSelectedIndex(0)
	v.status = widget.NewLabel("Search to find a model; its quantizations show whether they fit this machine.")
	v.status.Wrapping = fyne.TextWrapWord
	go_ := widget.NewButtonWithIcon("Search", theme.SearchIcon(), v.runSearch)

	v.title = widget.NewLabelWithStyle("Pick a model on the left.", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.context = widget.NewSelect([]string{"2048", "4096", "8192", "16384", "32768"}, func(string) { v.loadQuants() })
	v.context.SetSelected("4096")
	v.lanes = widget.NewSelect([]string{"1", "2", "4"}, func(string) { v.loadQuants() })
	v.lanes.SetSelected("1")
	v.quants = widget.NewRadioGroup(nil, func(string) { v.updateButtons() })
	v.title.Truncation = fyne.TextTruncateEllipsis
	v.note = widget.NewLabel("")
	v.note.Wrapping = fyne.TextWrapWord
	v.download = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), v.startDownload)
	v.download.Importance = widget.HighImportance
	v.download.Disable()
	v.card = widget.NewButtonWithIcon("Model card", theme.DocumentIcon(), v.showCard)
	v.card.Disable()

	detail := container.NewBorder(
		container.NewVBox(v.title, container.NewHBox(widget.NewLabel("Context"), v.context, widget.NewLabel("Lanes"), v.lanes)),
		container.NewVBox(v.note, container.NewHBox(v.download, v.card)), nil, nil,
		container.NewVScroll(v.quants))
	split := container.NewHSplit(container.NewVScroll(v.results), detail)
	split.Offset = 0.55
	top := container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(v.sort, go_), v.search),
		v.status, widget.NewSeparator())
	v.content = container.NewBorder(top, nil, nil, nil, split)
	return v
}

// runSearch asks the controller and lists the hits, or says why it could not and lists the
// catalog's models instead (what is already here works offline).
func (v *discoverView) runSearch() {
	if v.search == nil || v.sort == nil || v.status == nil {
		return // the sort's first selection, during construction
	}
	q := DiscoverQuery{Text: strings.TrimSpace(v.search.Text), Sort: sortNames[v.sort.Selected]}
	v.status.SetText("Searching…")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
		defer cancel()
		hits, err := v.app.c.Discover(ctx, q)
		v.app.do(func() { v.showResults(q, hits, err) })
	}()
}

func (v *discoverView) showResults(q DiscoverQuery, hits []HubModel, err error) {
	v.results.RemoveAll()
	if err != nil {
		v.status.SetText("Hugging Face cannot be searched now (" + err.Error() + "). The models already here:")
		for _, m := range v.app.c.Models() {
			v.results.Add(widget.NewLabel(m.ID + " · " + humanize.Bytes(uint64(m.Size))))
		}
		return
	}
	switch {
	case len(hits) == 0:
		v.status.SetText(fmt.Sprintf("No GGUF models match %q.", q.Text))
	default:
		v.status.SetText(fmt.Sprintf("%d models.", len(hits)))
	}
	for _, h := range hits {
		open := widget.NewButton("Open", func() { v.open(h.Repo) })
		name := widget.NewLabelWithStyle(h.Repo, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		name.Truncation = fyne.TextTruncateEllipsis
		lines := container.NewVBox(name)
		for _, line := range strings.Split(hitDetails(h), "\n") {
			details := widget.NewLabel(line)
			details.Truncation = fyne.TextTruncateEllipsis // long details must not widen the window
			lines.Add(details)
		}
		v.results.Add(container.NewBorder(nil, nil, nil, open, lines))
	}
}

// hitDetails is two lines, popularity then facts, so that the narrow results pane truncates
// neither the licence nor the size: "by acme · 1.2k downloads · 7 likes · updated 3 Nov 2026"
// and "apache-2.0 · 1.5B params".
func hitDetails(h HubModel) string {
	parts := []string{"by " + h.Author, compactCount(h.Downloads) + " downloads",
		fmt.Sprintf("%d likes", h.Likes)}
	if !h.Updated.IsZero() {
		parts = append(parts, "updated "+h.Updated.Format("2 Jan 2006"))
	}
	popularity := strings.Join(parts, " · ")
	parts = nil
	if h.License != "" {
		parts = append(parts, h.License)
	} else {
		parts = append(parts, "no licence given")
	}
	if h.Parameters > 0 {
		parts = append(parts, compactCount(h.Parameters)+" params")
	}
	if h.Gated {
		parts = append(parts, "gated (needs a token)")
	}
	return popularity + "\n" + strings.Join(parts, " · ")
}

// compactCount is n as people write counts: 950, 12.3k, 4.5M, 1.5B.
func compactCount(n int64) string {
	for _, u := range []struct {
		size   float64
		suffix string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if float64(n) >= u.size {
			return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/u.size), "0"), ".") + u.suffix
		}
	}
	return fmt.Sprint(n)
}

// open shows repo on the right.
func (v *discoverView) open(repo string) {
	v.repo = repo
	v.title.SetText(repo)
	v.card.Enable()
	v.loadQuants()
}

// loadQuants lists the open repository's quantizations for the chosen context and lanes.
func (v *discoverView) loadQuants() {
	if v.repo == "" || v.quants == nil || v.lanes == nil {
		return
	}
	repo := v.repo
	var ctxLen, lanes int
	fmt.Sscan(v.context.Selected, &ctxLen)
	fmt.Sscan(v.lanes.Selected, &lanes)
	v.note.SetText("Listing " + repo + "'s quantizations…")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
		defer cancel()
		qs, err := v.app.c.HubQuants(ctx, repo, ctxLen, lanes)
		v.app.do(func() {
			if repo == v.repo {
				v.showQuants(qs, err)
			}
		})
	}()
}

func (v *discoverView) showQuants(qs []HubQuant, err error) {
	v.byLabel = map[string]HubQuant{}
	var labels []string
	names := map[string]int{}
	for _, q := range qs {
		names[strings.ToLower(q.Name)]++
	}
	label := func(q HubQuant) string {
		if names[strings.ToLower(q.Name)] > 1 { // same-named quants in several folders: say which file
			return q.File + " · " + quantLabel(q)
		}
		return quantLabel(q)
	}
	for _, q := range qs {
		l := label(q)
		v.byLabel[l] = q
		labels = append(labels, l)
	}
	v.quants.Options = labels
	v.quants.Selected = ""
	switch {
	case err != nil:
		v.note.SetText("Cannot list the quantizations: " + err.Error())
	case len(qs) == 0:
		v.note.SetText("This repository has no GGUF quantizations.")
	default:
		v.note.SetText("")
		if best, ok := BestFit(qs); ok {
			v.quants.Selected = label(best)
		}
		for _, q := range qs {
			if q.Estimated {
				v.note.SetText("Memory is estimated from file sizes: the file headers could not be read.")
				break
			}
		}
	}
	v.quants.Refresh()
	v.updateButtons()
}

// quantLabel is "Q4_K_M · 4.9 GB · fits (needs 6.1 GB of 12 GB free)".
func quantLabel(q HubQuant) string {
	s := q.Name + " · " + humanize.Bytes(uint64(q.Size)) + " · " + q.Fit()
	if q.Free > 0 {
		s += fmt.Sprintf(" (needs %s of %s free)", humanize.Bytes(uint64(q.Need)), humanize.Bytes(uint64(q.Free)))
	} else {
		s += fmt.Sprintf(" (needs %s)", humanize.Bytes(uint64(q.Need)))
	}
	if q.Estimated {
		s += " ~"
	}
	return s
}

// BestFit is the largest quantization that fits with room to spare, else the largest that
// fits at all; none when nothing fits. Discover preselects it; the welcome's suggestion
// prefers it.
func BestFit(qs []HubQuant) (HubQuant, bool) {
	for _, verdict := range []string{FitFits, FitTight} {
		var best HubQuant
		found := false
		for _, q := range qs {
			if q.Fit() == verdict && (!found || q.Size > best.Size) {
				best, found = q, true
			}
		}
		if found {
			return best, true
		}
	}
	return HubQuant{}, false
}

func (v *discoverView) updateButtons() {
	if _, ok := v.byLabel[v.quants.Selected]; ok && v.repo != "" {
		v.download.Enable()
	} else {
		v.download.Disable()
	}
}

// startDownload pulls the chosen quantization with the Models tab's download row (its
// progress, cancel and resume) and shows that tab.
func (v *discoverView) startDownload() {
	q, ok := v.byLabel[v.quants.Selected]
	if !ok || v.repo == "" {
		return
	}
	if q.Reference == "" {
		v.note.SetText("No model reference can name " + q.File + " (its path holds characters a reference cannot); download it from the Hub's page and add the file.")
		return
	}
	if !v.app.models.pull(q.Reference) {
		v.note.SetText("A download is already running; wait for it or cancel it on the Models tab.")
		return
	}
	v.app.Show("models")
}

// showCard opens the repository's model card, rendered with hostile markdown neutralised.
func (v *discoverView) showCard() {
	repo := v.repo
	if repo == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
		defer cancel()
		md, err := v.app.c.ModelCard(ctx, repo)
		v.app.do(func() {
			if err != nil {
				v.note.SetText("Cannot read the model card: " + err.Error())
				return
			}
			// A card is one RichText, laid out whole: past maxCardBytes it would freeze the window.
			shown, _ := capText(md, 0, maxCardBytes)
			v.cardText = safeMarkdown(shown)
			v.cardText.Wrapping = fyne.TextWrapWord
			body := container.NewVBox(v.cardText)
			if shown != md {
				v.cardCut = noteLabel(fmt.Sprintf("The card goes on for %d KB more: read it all at https://huggingface.co/%s.", (len(md)-len(shown)+1023)>>10, repo)) // 1 KB, not 0, for a few bytes
				body.Add(v.cardCut)
			}
			scroll := container.NewVScroll(body)
			scroll.SetMinSize(fyne.NewSize(640, 480))
			dialog.ShowCustom(repo+" — model card", "Close", scroll, v.app.win)
		})
	}()
}

// maxCardBytes is how much of a model card is shown.
const maxCardBytes = 16 << 10

var (
	scriptRe = regexp.MustCompile(`(?is)<(script|style|iframe|object|embed)\b.*?(</\s*(script|style|iframe|object|embed)\s*>|\z)`)
	tagRe    = regexp.MustCompile(`(?s)<[^>]*>`)
	imageRe  = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)|!\[([^\]]*)\]\[[^\]]*\]`)
)

// safeMarkdown renders an untrusted model card: scripts and other HTML dropped, images
// replaced by their alt text (never fetched), and links kept only when they are http(s) (the
// others shown as plain text).
func safeMarkdown(md string) *widget.RichText {
	md = scriptRe.ReplaceAllString(md, "")
	md = tagRe.ReplaceAllString(md, "")
	md = imageRe.ReplaceAllStringFunc(md, func(m string) string {
		sm := imageRe.FindStringSubmatch(m)
		alt := strings.TrimSpace(sm[1] + sm[2])
		if alt == "" {
			alt = "image"
		}
		return "(image: " + alt + ")"
	})
	rt := widget.NewRichTextFromMarkdown(md)
	for i, seg := range rt.Segments {
		rt.Segments[i] = safeSegment(seg)
	}
	return rt
}

// safeSegment is seg with images as their alt text and non-http(s) links as text, so that
// whatever the markdown parser made of the card, nothing is fetched or opened that should not be.
func safeSegment(seg widget.RichTextSegment) widget.RichTextSegment {
	switch s := seg.(type) {
	case *widget.ImageSegment:
		return &widget.TextSegment{Text: "(image: " + cmpOr(s.Title, "image") + ")", Style: widget.RichTextStyleInline}
	case *widget.HyperlinkSegment:
		if s.URL == nil || (s.URL.Scheme != "http" && s.URL.Scheme != "https") {
			return &widget.TextSegment{Text: s.Text, Style: widget.RichTextStyleInline}
		}
	case *widget.ListSegment:
		for i, item := range s.Items {
			s.Items[i] = safeSegment(item)
		}
	case *widget.ParagraphSegment:
		for i, item := range s.Texts {
			s.Texts[i] = safeSegment(item)
		}
	}
	return seg
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
