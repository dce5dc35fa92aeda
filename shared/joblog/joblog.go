// Package joblog is the maintenance log: one durable record per job, written
// when the job ends (committed, failed or aborted), so that every change
// icekeeper made to a table, and every attempt it gave up, can be read back
// with `icekeeper log TABLE`.
//
// Records are JSON objects in icekeeper's bucket under
// log/<table>/<created-at>-<job-id>.json; keys sort by time. Writing a
// record is idempotent (a retried committer rewrites the same key), and a
// failure to write it never changes the job's outcome.
package joblog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/pruning"
)

// Record is one job's entry in the maintenance log.
type Record struct {
	JobID string `json:"job_id"`
	Table string `json:"table"`
	// Kind is what the job did: compaction or expire.
	Kind    string `json:"kind"`
	Trigger string `json:"trigger"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Parameters the job ran with.
	Parameters Parameters `json:"parameters"`
	// The pinned snapshot and, when committed, the new one.
	PinnedSnapshotID    messages.ID `json:"pinned_snapshot_id"`
	PinnedMetadata      string      `json:"pinned_metadata_location"`
	CommittedSnapshotID messages.ID `json:"committed_snapshot_id,omitempty"`
	// Table file statistics before (at the pinned snapshot) and after (at
	// the committed snapshot; absent when nothing was committed).
	Before *TableStats `json:"before,omitempty"`
	After  *TableStats `json:"after,omitempty"`
	// What the rewriters did (the winning attempts of the settled groups).
	Groups         int   `json:"groups"`
	GroupsDone     int   `json:"groups_done"`
	Attempts       int   `json:"attempts"`
	FilesIn        int64 `json:"files_in"`
	BytesIn        int64 `json:"bytes_in"`
	RowsIn         int64 `json:"rows_in"`
	FilesOut       int64 `json:"files_out"`
	BytesOut       int64 `json:"bytes_out"`
	RowsOut        int64 `json:"rows_out"`
	DeletedRows    int64 `json:"deleted_rows"`
	DeleteFilesOut int   `json:"delete_files_removed"`
	// An expiry's snapshots expired, and the files it deleted with their
	// bytes (the bytes it freed).
	SnapshotsExpired int   `json:"snapshots_expired,omitempty"`
	FilesDeleted     int   `json:"files_deleted,omitempty"`
	BytesFreed       int64 `json:"bytes_freed,omitempty"`
	// A manifest rewrite's data manifests replaced and written.
	ManifestsRewritten int `json:"manifests_rewritten,omitempty"`
	ManifestsAdded     int `json:"manifests_added,omitempty"`
	// An orphan cleanup's files removed.
	OrphansRemoved int `json:"orphans_removed,omitempty"`
	// A compaction's delete files committed during the job that its commit
	// rebased onto the new files.
	DeletesRebased int `json:"deletes_rebased,omitempty"`
	// A batched compaction's (partial progress) number of commits, and
	// the batches that committed, each with its snapshot. The rewriter
	// counters above count the committed batches' groups only; the
	// delete-file counters are the last batch's.
	Batches          int                 `json:"batches,omitempty"`
	CommittedBatches map[int]messages.ID `json:"committed_batches,omitempty"`
	// Phases and their durations in milliseconds: plan (planning to
	// tasks sent), rewrite (sum over groups; RewriteWallMillis is the
	// longest group), commit (the deciding committer's run).
	PlanMillis        int64 `json:"plan_ms"`
	RewriteMillis     int64 `json:"rewrite_ms"`
	RewriteWallMillis int64 `json:"rewrite_wall_ms"`
	CommitMillis      int64 `json:"commit_ms"`
	// Reads are what the job changed for the queries of the partitions it
	// touched (a committed compaction or delete-file rewrite): a full scan
	// and a point lookup per column, before and after, from the files'
	// bounds (package pruning). The ledger weighs them against the cost.
	Reads *pruning.Reads `json:"reads,omitempty"`
	// Unmeasured: the measures of the table (Before, After, Reads) were
	// cut short by the invocation's deadline (commit.RecordMargin), and
	// what they did not finish is missing.
	Unmeasured bool `json:"unmeasured,omitempty"`
	// Estimated cost of the job on Lambda and S3.
	Cost      Cost      `json:"estimated_cost"`
	CreatedAt time.Time `json:"created_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// Parameters are the settings a job ran with.
type Parameters struct {
	TargetFileSize int64 `json:"target_file_size,omitempty"`
	LeaseToken     int64 `json:"lease_token"`
	SequenceNumber int64 `json:"data_sequence_number"`
}

// TableStats are a table's live files at one snapshot.
type TableStats struct {
	DataFiles   int   `json:"data_files"`
	DataBytes   int64 `json:"data_bytes"`
	DeleteFiles int   `json:"delete_files"`
	Snapshots   int   `json:"snapshots"`
}

// Cost is an estimate, from measured durations and counted requests at list
// prices (us-east-1, arm64).
type Cost struct {
	LambdaGBSeconds float64 `json:"lambda_gb_seconds"`
	S3Gets          int64   `json:"s3_gets"`
	S3Puts          int64   `json:"s3_puts"`
	USD             float64 `json:"usd"`
}

// Prices used by Estimate.
const (
	LambdaArmGBSecond = 0.0000133334
	S3Get             = ledger.S3GetUSD
	S3Put             = 0.000005
)

// Estimate fills c from the job's durations and files: the rewriters'
// GB-seconds at rewriterMB, the planner's and committer's at coordinatorMB;
// two GETs per input file and delete file (footer and data), one PUT per
// 8 MiB of output, plus a handful per group for descriptors and tasks.
func Estimate(r Record, rewriterMB, coordinatorMB int) Cost {
	var c Cost
	c.LambdaGBSeconds = float64(r.RewriteMillis)/1000*float64(rewriterMB)/1024 +
		float64(r.PlanMillis+r.CommitMillis)/1000*float64(coordinatorMB)/1024
	c.S3Gets = 2*r.FilesIn + 2*int64(r.DeleteFilesOut) + 3*int64(r.Groups)
	c.S3Puts = r.BytesOut/(8<<20) + r.FilesOut + 3*int64(r.Groups) + 2
	c.USD = c.LambdaGBSeconds*LambdaArmGBSecond + float64(c.S3Gets)*S3Get + float64(c.S3Puts)*S3Put
	return c
}

// Store is where records live.
type Store interface {
	Put(ctx context.Context, name string, data []byte) (string, error)
	Get(ctx context.Context, key string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]string, error)
}

// Log writes and reads records.
type Log struct {
	store Store
}

// New returns a log over store.
func New(store Store) *Log { return &Log{store: store} }

func prefix(table string) string { return "log/" + table + "/" }

// Write stores r.
func (l *Log) Write(ctx context.Context, r Record) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("joblog: encode %s: %w", r.JobID, err)
	}
	key, err := l.store.Put(ctx, prefix(r.Table)+r.CreatedAt.UTC().Format("20060102T150405.000Z")+"-"+r.JobID+".json", b)
	if err != nil {
		return "", fmt.Errorf("joblog: write %s: %w", r.JobID, err)
	}
	return key, nil
}

// Read returns a table's records, newest first, at most limit (0: all).
func (l *Log) Read(ctx context.Context, table string, limit int) ([]Record, error) {
	keys, err := l.store.List(ctx, prefix(table))
	if err != nil {
		return nil, fmt.Errorf("joblog: list %s: %w", table, err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	return l.records(ctx, keys)
}

// records reads the records at keys, in their order (keys not of a record
// are skipped).
func (l *Log) records(ctx context.Context, keys []string) ([]Record, error) {
	out := make([]Record, 0, len(keys))
	for _, k := range keys {
		if !strings.HasSuffix(k, ".json") {
			continue
		}
		b, err := l.store.Get(ctx, k)
		if err != nil {
			return out, err
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return out, fmt.Errorf("joblog: %s: %w", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadSince returns a table's records of jobs created at or after since,
// oldest first (their keys sort by creation time).
func (l *Log) ReadSince(ctx context.Context, table string, since time.Time) ([]Record, error) {
	keys, err := l.store.List(ctx, prefix(table))
	if err != nil {
		return nil, fmt.Errorf("joblog: list %s: %w", table, err)
	}
	sort.Strings(keys)
	from := prefix(table) + since.UTC().Format("20060102T150405.000Z")
	kept := keys[:0]
	for _, k := range keys {
		if i := strings.LastIndex(k, prefix(table)); i >= 0 && k[i:] >= from {
			kept = append(kept, k)
		}
	}
	return l.records(ctx, kept)
}

// LedgerEntry is r's ledger entry, if the ledger weighs r's kind: its
// cost, and for a committed job its reads.
func (r Record) LedgerEntry() (ledger.Entry, bool) {
	if !slices.Contains(ledger.Kinds, r.Kind) {
		return ledger.Entry{}, false
	}
	e := ledger.Entry{JobID: r.JobID, Kind: r.Kind, Outcome: r.Outcome, CreatedAt: r.CreatedAt, EndedAt: r.EndedAt, CostUSD: r.Cost.USD}
	if r.Outcome == "committed" {
		e.Reads, e.Unmeasured = r.Reads, r.Unmeasured
	}
	return e, true
}

// LedgerWriter stores ledger entries (ledger.Store).
type LedgerWriter interface {
	Put(ctx context.Context, table string, e ledger.Entry) error
}

// Recorder writes each record to the log and, for the kinds the ledger
// weighs, its entry to the ledger: the committer's recorder.
type Recorder struct {
	Log    *Log
	Ledger LedgerWriter
}

// Write stores r in the log, then its entry; the key is the log's.
func (rc Recorder) Write(ctx context.Context, r Record) (string, error) {
	key, err := rc.Log.Write(ctx, r)
	if e, ok := r.LedgerEntry(); ok && rc.Ledger != nil {
		err = errors.Join(err, rc.Ledger.Put(ctx, r.Table, e))
	}
	return key, err
}
