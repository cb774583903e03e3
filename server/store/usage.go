package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// UsageQuery selects request records and says how to sum them.
type UsageQuery struct {
	// From and To bound the records' CreatedAt: From <= t < To; a zero bound is open.
	From, To time.Time
	// Key keeps only one key's records: its id or its name. nil keeps every record; a pointer
	// to "" keeps those made without a key.
	Key *string
	// KeyID, when set, keeps only the records of the key with this id.
	KeyID string
	// Model keeps only one model's records ("" keeps all).
	Model string
	// PersonID, when set, keeps only the records of the person with this id (team mode).
	PersonID string
	// Lane, when set, keeps only the records of the team-mode lane with this name.
	Lane string
	// ByKey, ByModel, ByDay, ByPerson and ByLane say what the sums are grouped by; none gives
	// one total.
	ByKey, ByModel, ByDay, ByPerson, ByLane bool
}

// UsageRow is one group's sums. The fields a query does not group by are "".
type UsageRow struct {
	// KeyID and KeyName are the key ("" for requests made without one).
	KeyID, KeyName string
	// PersonID and PersonName are the person ("" for requests made without a person's key).
	PersonID, PersonName string
	Model                string
	// Day is the UTC date, YYYY-MM-DD.
	Day string
	// LaneName and Engine are the team-mode lane and its engine kind ("" for requests no lane
	// served).
	LaneName, Engine string
	// Requests counts the records; Errors those with a status of 400 or more (client hang-ups,
	// recorded as 499, included).
	Requests, Errors                             int64
	PromptTokens, CachedTokens, CompletionTokens int64
	// Duration sums the requests' total times.
	Duration time.Duration
}

// Usage sums the request records q selects, grouped as it says, ordered by day, person, key
// name, key id, model and lane.
func (s *Store) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	keyID, keyName, model, day, personID, personName, lane, engine := "''", "''", "''", "''", "''", "''", "''", "''"
	var group []string
	if q.ByKey {
		keyID, keyName = "key_id", "max(key_name)"
		group = append(group, "key_id")
	}
	if q.ByModel {
		model = "model"
		group = append(group, "model")
	}
	if q.ByDay {
		day = "substr(created_at, 1, 10)" // created_at is RFC 3339 UTC text
		group = append(group, day)
	}
	if q.ByPerson {
		personID, personName = "person_id", "max(person_name)"
		group = append(group, "person_id")
	}
	if q.ByLane {
		lane, engine = "lane_name", "max(engine)" // a lane keeps its engine kind
		group = append(group, "lane_name")
	}
	var where []string
	var args []any
	if !q.From.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, formatTime(q.From))
	}
	if !q.To.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, formatTime(q.To))
	}
	if q.Key != nil {
		if *q.Key == "" {
			where = append(where, "key_id = ''")
		} else {
			where, args = append(where, "(key_id = ? OR key_name = ?)"), append(args, *q.Key, *q.Key)
		}
	}
	if q.KeyID != "" {
		where, args = append(where, "key_id = ?"), append(args, q.KeyID)
	}
	if q.Model != "" {
		where, args = append(where, "model = ?"), append(args, q.Model)
	}
	if q.PersonID != "" {
		where, args = append(where, "person_id = ?"), append(args, q.PersonID)
	}
	if q.Lane != "" {
		where, args = append(where, "lane_name = ?"), append(args, q.Lane)
	}
	query := `SELECT ` + strings.Join([]string{keyID, keyName, model, day, personID, personName, lane, engine}, ", ") + `,
		count(*), coalesce(sum(status >= 400), 0), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),
		coalesce(sum(completion_tokens), 0), coalesce(sum(total_us), 0)
		FROM requests`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if len(group) > 0 {
		query += " GROUP BY " + strings.Join(group, ", ")
	} else {
		query += " HAVING count(*) > 0" // no records: no total row
	}
	query += " ORDER BY 4, 6, 5, 2, 1, 3, 7"
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		var us int64
		if err := rows.Scan(&r.KeyID, &r.KeyName, &r.Model, &r.Day, &r.PersonID, &r.PersonName, &r.LaneName, &r.Engine, &r.Requests, &r.Errors,
			&r.PromptTokens, &r.CachedTokens, &r.CompletionTokens, &us); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		r.Duration = time.Duration(us) * time.Microsecond
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return out, nil
}
