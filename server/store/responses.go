package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Response is one stored Responses API response. Input, Output and Body are JSON the dialect
// wrote; the store only checks that they are valid JSON.
type Response struct {
	ID    string // e.g. "resp_..."; required and unique
	Model string
	// PreviousResponseID is the response this one continues; "" when it starts a conversation.
	PreviousResponseID string
	// Instructions is the request's system text; nil when it had none.
	Instructions *string
	Status       string          // e.g. "completed", "incomplete"
	Input        json.RawMessage // the request's own input items (a JSON array); nil is []
	Output       json.RawMessage // the output items (a JSON array); nil is []
	Body         json.RawMessage // the whole response object as served; nil is {}
	InputTokens  int
	OutputTokens int
	CachedTokens int
	CreatedAt    time.Time // stored in UTC, nanosecond precision; zero means now
	// Owner is the id of the API key that made the response; "" when made without keys.
	Owner string
}

// MissingResponseError says which response of a conversation is gone: never stored, or
// deleted. It wraps ErrNotFound.
type MissingResponseError struct {
	ID string
}

func (e *MissingResponseError) Error() string { return "response " + e.ID + " not found" }

// Unwrap lets errors.Is(err, ErrNotFound) match.
func (e *MissingResponseError) Unwrap() error { return ErrNotFound }

// maxChain bounds a conversation walk; ids are unique and a response can only continue an
// earlier one, so this only guards against a hand-edited database with a cycle.
const maxChain = 100_000

// responseFields are the columns every response query selects, in nullableResponse.dest order.
var responseFields = []string{"id", "model", "created_at", "previous_response_id", "instructions", "status",
	"input", "output", "body", "input_tokens", "output_tokens", "cached_tokens", "owner"}

var responseColumns = strings.Join(responseFields, ", ")

// SaveResponse stores r. A zero CreatedAt is set to the current time. Saving an ID twice is
// an error, and so is JSON that does not parse.
func (s *Store) SaveResponse(ctx context.Context, r Response) error {
	if r.ID == "" {
		return errors.New("save response: empty id")
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO responses (`+responseColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Model, formatTime(r.CreatedAt), r.PreviousResponseID, r.Instructions, r.Status,
		jsonOr(r.Input, "[]"), jsonOr(r.Output, "[]"), jsonOr(r.Body, "{}"),
		r.InputTokens, r.OutputTokens, r.CachedTokens, r.Owner)
	if err != nil {
		return fmt.Errorf("save response %s: %w", r.ID, err)
	}
	return nil
}

// jsonOr is raw as text, or def when raw is empty.
func jsonOr(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// Response returns the stored response with the given id, or an error wrapping ErrNotFound
// (a *MissingResponseError).
func (s *Store) Response(ctx context.Context, id string) (Response, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+responseColumns+` FROM responses WHERE id = ?`, id)
	r, err := scanResponse(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Response{}, &MissingResponseError{ID: id}
	}
	if err != nil {
		return Response{}, fmt.Errorf("response %s: %w", id, err)
	}
	return r, nil
}

// ResponseChain returns the conversation that ends with the response id: that response and
// every response it continues, oldest first. When any of them is gone the error is a
// *MissingResponseError naming the first missing one found walking back from id.
func (s *Store) ResponseChain(ctx context.Context, id string) ([]Response, error) {
	// One statement, so the walk sees one snapshot even while responses are deleted. The
	// LEFT JOIN keeps a link to a missing row, which is how a gap shows.
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE chain(depth, id) AS (
			SELECT 0, ?
			UNION ALL
			SELECT chain.depth + 1, r.previous_response_id
			FROM chain JOIN responses r ON r.id = chain.id
			WHERE r.previous_response_id <> '' AND chain.depth < ?
		)
		SELECT chain.id, r.id IS NOT NULL, `+"r."+strings.Join(responseFields, ", r.")+`
		FROM chain LEFT JOIN responses r ON r.id = chain.id
		ORDER BY chain.depth`, id, maxChain)
	if err != nil {
		return nil, fmt.Errorf("response chain %s: %w", id, err)
	}
	defer rows.Close()
	var newestFirst []Response
	for rows.Next() {
		var link string
		var found bool
		var r nullableResponse
		if err := rows.Scan(append([]any{&link, &found}, r.dest()...)...); err != nil {
			return nil, fmt.Errorf("response chain %s: %w", id, err)
		}
		if !found {
			return nil, &MissingResponseError{ID: link}
		}
		resp, err := r.response()
		if err != nil {
			return nil, fmt.Errorf("response chain %s: %w", id, err)
		}
		newestFirst = append(newestFirst, resp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("response chain %s: %w", id, err)
	}
	if n := len(newestFirst); n > maxChain && newestFirst[n-1].PreviousResponseID != "" {
		return nil, fmt.Errorf("response chain %s: longer than %d responses", id, maxChain)
	}
	out := make([]Response, 0, len(newestFirst))
	for i := len(newestFirst) - 1; i >= 0; i-- {
		out = append(out, newestFirst[i])
	}
	return out, nil
}

// DeleteResponse removes the response with the given id, content and all. Responses that
// continue it stay, but can no longer be continued (their chain has a gap). It returns an
// error wrapping ErrNotFound (a *MissingResponseError) when there is no such response.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM responses WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete response %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete response %s: %w", id, err)
	}
	if n == 0 {
		return &MissingResponseError{ID: id}
	}
	return nil
}

// nullableResponse scans responseColumns from a row that may be all NULL (a LEFT JOIN miss).
type nullableResponse struct {
	id, model, created, prev, status sql.NullString
	instructions, owner              sql.NullString
	input, output, body              sql.NullString
	in, out, cached                  sql.NullInt64
}

func (n *nullableResponse) dest() []any {
	return []any{&n.id, &n.model, &n.created, &n.prev, &n.instructions, &n.status,
		&n.input, &n.output, &n.body, &n.in, &n.out, &n.cached, &n.owner}
}

func (n *nullableResponse) response() (Response, error) {
	r := Response{
		ID: n.id.String, Model: n.model.String, PreviousResponseID: n.prev.String, Status: n.status.String,
		Input: json.RawMessage(n.input.String), Output: json.RawMessage(n.output.String), Body: json.RawMessage(n.body.String),
		InputTokens: int(n.in.Int64), OutputTokens: int(n.out.Int64), CachedTokens: int(n.cached.Int64), Owner: n.owner.String,
	}
	if n.instructions.Valid {
		v := n.instructions.String
		r.Instructions = &v
	}
	var err error
	if r.CreatedAt, err = parseTime(n.created.String); err != nil {
		return Response{}, fmt.Errorf("created_at %q: %w", n.created.String, err)
	}
	return r, nil
}

// scanResponse reads one row of responseColumns.
func scanResponse(row interface{ Scan(...any) error }) (Response, error) {
	var n nullableResponse
	if err := row.Scan(n.dest()...); err != nil {
		return Response{}, err
	}
	return n.response()
}
