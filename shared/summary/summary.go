// Package summary is a deployment's weekly summary: what icekeeper did to
// each table in one ISO week (its jobs by kind, their estimated cost), what
// that measurably saved the tables' queries (the ledger), which tables are
// backed off and why, the verdicts of layouts on trial, and the partition
// spec changes proposed and waiting for a human.
//
// Build is a pure function of what icekeeper already records: the
// maintenance log's records (package joblog), each table's ledger
// assessment (package ledger), its lease's failure back-off (package
// lease) and its latest health report (the planner's
// health/<table>/latest.json, with the layout trial's verdict and the
// partition proposals). It keeps no state of its own.
//
// Invariants:
//   - The week covered is the last complete ISO week (Monday 00:00 UTC to
//     the next Monday) before the time of the run: running again in the
//     same week builds the same week, from the same records the same
//     summary, written to the same keys (summary/<yyyy>-W<ww>.json and
//     .html) with the same ID.
//   - It only reads and summarizes; nothing it builds decides maintenance.
//   - The event's detail (Event) carries totals and keys only, never the
//     per-table lines, so it stays far under EventBridge's 256 KB entry
//     limit whatever the deployment's size.
package summary

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/specproposal"
)

// Input is what a summary is built from.
type Input struct {
	// Deployment names the deployment (the stack's bucket, or "local").
	Deployment string
	// At is when the summary is built; the week covered is Week(At).
	At     time.Time
	Tables []TableInput
}

// TableInput is what is recorded about one table.
type TableInput struct {
	Table string
	// Records are its maintenance log's records; Build keeps those that
	// ended in the week.
	Records []joblog.Record
	// Ledger is its ledger assessment at At (nil: not read).
	Ledger *ledger.Assessment
	// Failures is its lease's failure back-off (zero: none).
	Failures lease.Backoff
	// Health is its latest health report (nil: none published).
	Health *Health
}

// Health is the part of a published health report the summary reads.
type Health struct {
	GeneratedAt     time.Time               `json:"generated_at"`
	Score           float64                 `json:"score"`
	Recommendations []health.Recommendation `json:"recommendations"`
	LayoutTrial     *layouttrial.Verdict    `json:"layout_trial,omitempty"`
	Proposals       []specproposal.Proposal `json:"partition_proposals,omitempty"`
}

// Summary is one week of a deployment.
type Summary struct {
	// ID is deterministic: the deployment and the week.
	ID          string    `json:"id"`
	Deployment  string    `json:"deployment"`
	Week        string    `json:"week"`
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	GeneratedAt time.Time `json:"generated_at"`
	Totals      Totals    `json:"totals"`
	Tables      []Table   `json:"tables"`
}

// Totals add up the tables.
type Totals struct {
	Tables int `json:"tables"`
	// Maintained: tables with at least one job in the week.
	Maintained int `json:"tables_maintained"`
	Jobs       int `json:"jobs"`
	Committed  int `json:"committed"`
	Failed     int `json:"failed"`
	Aborted    int `json:"aborted"`
	// CostUSD is the week's jobs' estimated cost, SavedUSD what the
	// ledger weighed they saved the queries (the rewrites only).
	CostUSD  float64 `json:"cost_usd"`
	SavedUSD float64 `json:"saved_usd"`
	// FilesRemoved are data files in minus out of committed rewrites;
	// BytesFreed what committed expiries and orphan cleanups deleted.
	FilesRemoved     int64 `json:"files_removed"`
	SnapshotsExpired int   `json:"snapshots_expired"`
	BytesFreed       int64 `json:"bytes_freed"`
	OrphansRemoved   int   `json:"orphans_removed"`
	BackedOff        int   `json:"tables_backed_off"`
	LayoutVerdicts   int   `json:"layout_verdicts"`
	ProposalsPending int   `json:"partition_proposals_pending"`
}

// Table is one table's week.
type Table struct {
	Table   string   `json:"table"`
	Actions []Action `json:"actions,omitempty"`
	CostUSD float64  `json:"cost_usd"`
	// Improvement is the ledger's line for the week (nil: no ledger, or
	// no weighed job in the week).
	Improvement *Improvement `json:"improvement,omitempty"`
	BackedOff   []BackOff    `json:"backed_off,omitempty"`
	// LayoutTrial is the verdict on the layout on trial, from the latest
	// health report.
	LayoutTrial *layouttrial.Verdict `json:"layout_trial,omitempty"`
	// Proposals are the partition spec changes proposed, never applied:
	// a human decides.
	Proposals []specproposal.Proposal `json:"partition_proposals,omitempty"`
	// Score is the latest health report's (nil: none).
	Score           *float64 `json:"health_score,omitempty"`
	Recommendations []string `json:"recommendations,omitempty"`
}

// Action is one kind of job on a table in the week.
type Action struct {
	Kind      string `json:"kind"`
	Jobs      int    `json:"jobs"`
	Committed int    `json:"committed"`
	Failed    int    `json:"failed"`
	Aborted   int    `json:"aborted"`
	// Committed jobs' files and bytes in and out (rewrites), snapshots
	// expired, files and bytes freed (expiry), manifests rewritten,
	// orphans removed.
	FilesIn            int64   `json:"files_in,omitempty"`
	FilesOut           int64   `json:"files_out,omitempty"`
	BytesIn            int64   `json:"bytes_in,omitempty"`
	BytesOut           int64   `json:"bytes_out,omitempty"`
	SnapshotsExpired   int     `json:"snapshots_expired,omitempty"`
	BytesFreed         int64   `json:"bytes_freed,omitempty"`
	ManifestsRewritten int     `json:"manifests_rewritten,omitempty"`
	OrphansRemoved     int     `json:"orphans_removed,omitempty"`
	CostUSD            float64 `json:"cost_usd"`
	// LastFailure is the reason of the week's last failed or aborted job.
	LastFailure string `json:"last_failure,omitempty"`
}

// Improvement is the ledger's week: cost against saving.
type Improvement struct {
	CostUSD  float64 `json:"cost_usd"`
	SavedUSD float64 `json:"saved_usd"`
	NetUSD   float64 `json:"net_usd"`
	// SavedBytes are the bytes the queries did not scan, Queries the
	// queries weighed.
	SavedBytes float64 `json:"saved_bytes"`
	Queries    int64   `json:"queries"`
	// Complete: every job's horizon (ledger.Horizon) has ended; until
	// then the saving is a lower bound.
	Complete bool   `json:"complete"`
	Verdict  string `json:"verdict"`
}

// BackOff is why a table's maintenance is held back at the time of the
// summary.
type BackOff struct {
	// Cause is "ledger" (cost more than it saved) or "failures" (repeated
	// failed jobs).
	Cause  string    `json:"cause"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// Causes of a back-off.
const (
	CauseLedger   = "ledger"
	CauseFailures = "failures"
)

// Week is the ISO week covered by a summary built at t: the last
// complete one (Monday 00:00 UTC to the next Monday 00:00 UTC) before t,
// and its name, yyyy-Www.
func Week(t time.Time) (from, to time.Time, name string) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	to = day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	from = to.AddDate(0, 0, -7)
	y, w := from.ISOWeek()
	return from, to, fmt.Sprintf("%04d-W%02d", y, w)
}

// Keys are a week's object names in the bucket (before the stack's
// prefix), and the latest's.
func Keys(week string) (jsonKey, htmlKey string) {
	return "summary/" + week + ".json", "summary/" + week + ".html"
}

// Latest keys always hold the newest summary.
const (
	LatestJSON = "summary/latest.json"
	LatestHTML = "summary/latest.html"
)

// Build summarizes in.
func Build(in Input) Summary {
	from, to, week := Week(in.At)
	s := Summary{ID: in.Deployment + "/" + week, Deployment: in.Deployment, Week: week, From: from, To: to, GeneratedAt: in.At.UTC(), Tables: []Table{}}
	tables := slices.Clone(in.Tables)
	slices.SortFunc(tables, func(a, b TableInput) int { return strings.Compare(a.Table, b.Table) })
	for _, ti := range tables {
		t := buildTable(ti, from, to, in.At.UTC())
		s.Totals.add(t)
		s.Tables = append(s.Tables, t)
	}
	return s
}

func buildTable(ti TableInput, from, to, at time.Time) Table {
	t := Table{Table: ti.Table}
	byKind := map[string]*Action{}
	recs := slices.Clone(ti.Records)
	slices.SortFunc(recs, func(a, b joblog.Record) int { return a.EndedAt.Compare(b.EndedAt) })
	for _, r := range recs {
		if r.EndedAt.Before(from) || !r.EndedAt.Before(to) {
			continue
		}
		a := byKind[r.Kind]
		if a == nil {
			a = &Action{Kind: r.Kind}
			byKind[r.Kind] = a
		}
		a.Jobs++
		a.CostUSD += r.Cost.USD
		t.CostUSD += r.Cost.USD
		switch r.Outcome {
		case "committed":
			a.Committed++
			a.FilesIn += r.FilesIn
			a.FilesOut += r.FilesOut
			a.BytesIn += r.BytesIn
			a.BytesOut += r.BytesOut
			a.SnapshotsExpired += r.SnapshotsExpired
			a.BytesFreed += r.BytesFreed
			a.ManifestsRewritten += r.ManifestsRewritten
			a.OrphansRemoved += r.OrphansRemoved
		case "aborted":
			a.Aborted++
			a.LastFailure = r.Reason
		default:
			a.Failed++
			a.LastFailure = r.Reason
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		t.Actions = append(t.Actions, *byKind[k])
	}
	if l := ti.Ledger; l != nil {
		for _, w := range l.Weeks {
			if w.Start == from.Format(time.DateOnly) && w.Jobs > 0 {
				t.Improvement = &Improvement{CostUSD: w.CostUSD, SavedUSD: w.SavedUSD, NetUSD: w.NetUSD(), SavedBytes: w.Saved.Bytes,
					Queries: w.Queries, Complete: w.Complete, Verdict: l.Verdict.Reason}
			}
		}
		if l.Verdict.BackOff && !l.Allows(at) {
			t.BackedOff = append(t.BackedOff, BackOff{Cause: CauseLedger, Until: l.NextAllowed.UTC(), Reason: l.Verdict.Reason})
		}
	}
	if b := ti.Failures; b.Active(at) {
		why := fmt.Sprintf("the table's last %d jobs failed the same way (%s)", b.Streak, b.Class)
		if b.Class == lease.ClassConflict {
			why = fmt.Sprintf("the table's last %d jobs were aborted by concurrent commits (%s)", b.Streak, b.Class)
		}
		t.BackedOff = append(t.BackedOff, BackOff{Cause: CauseFailures, Until: b.Until.UTC(), Reason: why})
	}
	if h := ti.Health; h != nil {
		score := h.Score
		t.Score = &score
		t.LayoutTrial = h.LayoutTrial
		t.Proposals = h.Proposals
		for _, r := range h.Recommendations {
			t.Recommendations = append(t.Recommendations, r.Action)
		}
	}
	return t
}

func (s *Totals) add(t Table) {
	s.Tables++
	if len(t.Actions) > 0 {
		s.Maintained++
	}
	for _, a := range t.Actions {
		s.Jobs += a.Jobs
		s.Committed += a.Committed
		s.Failed += a.Failed
		s.Aborted += a.Aborted
		s.CostUSD += a.CostUSD
		if slices.Contains(ledger.Kinds, a.Kind) {
			s.FilesRemoved += a.FilesIn - a.FilesOut
		}
		s.SnapshotsExpired += a.SnapshotsExpired
		s.BytesFreed += a.BytesFreed
		s.OrphansRemoved += a.OrphansRemoved
	}
	if t.Improvement != nil {
		s.SavedUSD += t.Improvement.SavedUSD
	}
	if len(t.BackedOff) > 0 {
		s.BackedOff++
	}
	if t.LayoutTrial != nil {
		s.LayoutVerdicts++
	}
	s.ProposalsPending += len(t.Proposals)
}
