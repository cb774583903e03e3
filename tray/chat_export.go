package tray

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
)

// exportFile is a conversation as its JSON export writes it: a versioned shape of its own, so
// a later Message field does not change the file, and attachments as their names only (the
// saved conversation does not keep their bytes either).
type exportFile struct {
	Format   string          `json:"format"` // "superfluid-conversation/1"
	Title    string          `json:"title"`
	Model    string          `json:"model,omitempty"`
	System   string          `json:"system,omitempty"`
	Messages []exportMessage `json:"messages"`
}

type exportMessage struct {
	Role            string     `json:"role"`
	Content         string     `json:"content"`
	Reasoning       string     `json:"reasoning,omitempty"`
	ReasoningTokens int        `json:"reasoning_tokens,omitempty"`
	ToolCalls       []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID      string     `json:"tool_call_id,omitempty"`
	Attachments     []string   `json:"attachments,omitempty"`
}

const exportFormat = "superfluid-conversation/1"

// conversationJSON is c as an export file.
func conversationJSON(c Conversation) ([]byte, error) {
	f := exportFile{Format: exportFormat, Title: c.Title, Model: c.Model, System: c.System, Messages: []exportMessage{}}
	for _, m := range c.Messages {
		em := exportMessage{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ReasoningTokens: m.ReasoningTokens,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		for _, a := range m.Attachments {
			em.Attachments = append(em.Attachments, a.Name)
		}
		f.Messages = append(f.Messages, em)
	}
	return json.MarshalIndent(f, "", "  ")
}

// parseConversationJSON reads an export file back (without an id: an import is a new chat).
func parseConversationJSON(b []byte) (Conversation, error) {
	var f exportFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Conversation{}, fmt.Errorf("not a conversation export: %w", err)
	}
	if f.Format != exportFormat {
		return Conversation{}, errors.New("not a conversation export from superfluid (no \"format\": \"" + exportFormat + "\")")
	}
	c := Conversation{Title: f.Title, Model: f.Model, System: f.System}
	for _, m := range f.Messages {
		c.Messages = append(c.Messages, Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning,
			ReasoningTokens: m.ReasoningTokens, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	}
	return c, nil
}

// conversationMarkdown is c as a markdown document: a heading per turn, the thought as a
// quote, tool calls and results as fenced blocks.
func conversationMarkdown(c Conversation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.Title)
	if c.Model != "" {
		fmt.Fprintf(&b, "Model: `%s`\n\n", c.Model)
	}
	if c.System != "" {
		fmt.Fprintf(&b, "## System\n\n%s\n\n", c.System)
	}
	for _, m := range c.Messages {
		switch m.Role {
		case "user":
			b.WriteString("## You\n\n")
		case "tool":
			fmt.Fprintf(&b, "## Tool result %s\n\n```\n%s\n```\n\n", m.ToolCallID, m.Content)
			continue
		default:
			fmt.Fprintf(&b, "## %s\n\n", strings.ToUpper(m.Role[:1])+m.Role[1:])
		}
		for _, a := range m.Attachments {
			fmt.Fprintf(&b, "*[%s]*\n\n", a.Name)
		}
		if m.Reasoning != "" {
			b.WriteString("> " + strings.ReplaceAll(strings.TrimSpace(m.Reasoning), "\n", "\n> ") + "\n\n")
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "Tool call `%s` (%s):\n\n```json\n%s\n```\n\n", tc.Name, tc.ID, tc.Arguments)
		}
		if m.Content != "" {
			b.WriteString(m.Content + "\n\n")
		}
	}
	return b.String()
}

// exportDialog saves the conversation on screen as markdown, or JSON when the name ends .json.
func (t *chatTools) exportDialog() {
	v := t.v
	if len(v.history) == 0 {
		v.stats.SetText("Nothing to export yet: the conversation is empty.")
		return
	}
	c := v.conversation()
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			return
		}
		v.stats.SetText(writeExport(w, c))
	}, v.app.win)
	d.SetFileName(fileSafe(c.Title) + ".md")
	d.SetFilter(storage.NewExtensionFileFilter([]string{".md", ".json"}))
	d.Show()
}

// writeExport writes c to w (JSON for a .json name, else markdown) and says how it went.
func writeExport(w fyne.URIWriteCloser, c Conversation) string {
	defer w.Close()
	var data []byte
	if strings.EqualFold(w.URI().Extension(), ".json") {
		b, err := conversationJSON(c)
		if err != nil {
			return "Cannot export: " + err.Error()
		}
		data = b
	} else {
		data = []byte(conversationMarkdown(c))
	}
	if _, err := w.Write(data); err != nil {
		return "Cannot export: " + err.Error()
	}
	return "Exported to " + w.URI().Name() + "."
}

// importDialog reads a JSON export as a new saved conversation and shows it.
func (t *chatTools) importDialog() {
	v := t.v
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			return
		}
		defer r.Close()
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err == nil {
			err = v.importConversation(b)
		}
		if err != nil {
			v.stats.SetText("Cannot import: " + err.Error())
		}
	}, v.app.win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".json"}))
	d.Show()
}

// importConversation saves an export file's conversation under a new id and shows it.
func (v *playgroundView) importConversation(b []byte) error {
	c, err := parseConversationJSON(b)
	if err != nil {
		return err
	}
	c.ID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
	if err := v.app.c.SaveConversation(c); err != nil {
		return err
	}
	v.show(c)
	v.refreshSaved()
	return nil
}

// fileSafe is a title as a file name.
func fileSafe(title string) string {
	name := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) || r < ' ' {
			return '-'
		}
		return r
	}, strings.TrimSuffix(title, "…"))
	if strings.TrimSpace(name) == "" {
		return "conversation"
	}
	return name
}
