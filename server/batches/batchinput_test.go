package batches

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestBatchValidationFailures: a batch whose input has a bad line fails before any line runs,
// saying which line and why; so does one whose input file is gone when its turn comes.
func TestBatchValidationFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		endpoint string
		lines    []string
		want     []BatchError
	}{
		{"malformed line", "/v1/chat/completions", []string{chatLine("a", ""), `{"custom_id": "b", "method": "POST",`},
			[]BatchError{{Code: "invalid_json_line", Line: 2}}},
		{"unsupported url", "/v1/chat/completions", []string{chatLine("a", ""), strings.Replace(chatLine("b", ""), "/v1/chat/completions", "/v1/moderations", 1)},
			[]BatchError{{Code: "invalid_url", Param: "url", Line: 2}}},
		{"url of another endpoint", "/v1/completions", []string{chatLine("a", "")},
			[]BatchError{{Code: "invalid_url", Param: "url", Line: 1}}},
		{"model that does not exist", "/v1/chat/completions", []string{chatLine("a", ""), "", strings.Replace(chatLine("b", ""), `"fake"`, `"nope"`, 1)},
			[]BatchError{{Code: "model_not_found", Param: "body.model", Line: 3}}},
		{"no model", "/v1/chat/completions", []string{`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}`},
			[]BatchError{{Code: "missing_required_parameter", Param: "body.model", Line: 1}}},
		{"body not an object", "/v1/chat/completions", []string{`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":"hi"}`},
			[]BatchError{{Code: "invalid_request", Param: "body", Line: 1}}},
		{"duplicate and missing custom ids", "/v1/chat/completions", []string{chatLine("a", ""), chatLine("a", ""),
			`{"method":"POST","url":"/v1/chat/completions","body":{"model":"fake"}}`},
			[]BatchError{{Code: "duplicate_custom_id", Param: "custom_id", Line: 2}, {Code: "missing_required_parameter", Param: "custom_id", Line: 3}}},
		{"method", "/v1/chat/completions", []string{strings.Replace(chatLine("a", ""), "POST", "GET", 1)},
			[]BatchError{{Code: "invalid_method", Param: "method", Line: 1}}},
		{"empty file", "/v1/chat/completions", []string{"", "  "}, []BatchError{{Code: "empty_file"}}},
		{"missing file", "/v1/chat/completions", []string{chatLine("a", "")},
			[]BatchError{{Code: "file_not_found", Param: "input_file_id"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newBatchFixture(t, Config{}, "", nil)
			in := f.input(t, tt.lines...)
			b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: tt.endpoint})
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "missing file" { // deleted before the batch's turn
				if err := f.svc.DeleteFile(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			f.start(t)
			b = f.wait(t, b.ID, "the batch to fail", ended)
			if b.Status != BatchFailed || b.FailedAt.IsZero() || b.OutputFileID != "" || b.ErrorFileID != "" {
				t.Fatalf("batch %+v", b)
			}
			var got []BatchError
			for _, e := range b.Errors {
				if e.Message == "" {
					t.Errorf("error %+v has no message", e)
				}
				e.Message = ""
				got = append(got, e)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("errors %+v, want %+v", got, tt.want)
			}
			if n := len(f.fake.Requests()); n != 0 {
				t.Fatalf("%d lines ran", n)
			}
		})
	}
}

// TestLineReader: blank lines are skipped (not counted), a last line without a newline is
// read, and line numbers count every line of the file.
func TestLineReader(t *testing.T) {
	lr := newLineReader(strings.NewReader("a\n\n  \r\nb\r\nc"))
	var got []string
	var nums []int
	for {
		line, n, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, nums = append(got, string(line)), append(nums, n)
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) || !slices.Equal(nums, []int{1, 4, 5}) {
		t.Fatalf("lines %q at %v", got, nums)
	}
}
