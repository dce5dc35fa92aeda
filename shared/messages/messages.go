// Package messages defines the formats that cross process boundaries between
// icekeeper's stages, and their encoding:
//
//   - Task: planner -> rewriter (SQS task queue), one per file group.
//   - CommitRequest: rewriter -> committer (SQS commit queue).
//   - Plan: the planner's record of every group's input files (S3).
//   - Descriptor: what one rewriter attempt wrote for one group (S3).
//
// Iceberg values (file scan tasks, data files) travel as iceberg-go's own Avro
// codec bytes (package codec), which are the bytes a manifest would carry;
// the receiver decodes them with the pinned table's spec, schema and format
// version. Every format carries a version number; a reader rejects versions it
// does not know instead of guessing. docs/FORMATS.md documents them.
package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
)

// FormatVersion is the version of every format in this package.
const FormatVersion = 1

// DefaultInlineRowMapBytes is the largest row map a rewriter writes into
// its descriptor (ICEKEEPER_INLINE_ROW_MAP_BYTES): a binpack group's map
// is a few hundred bytes a file plus the deleted positions' bitmaps, and
// one the committer reads with the descriptor costs no S3 PUT of its own.
const DefaultInlineRowMapBytes = 32 << 10

// Snapshot summary properties icekeeper's commits carry (commit.SummaryJobID
// and commit.SummaryStagedFor): the job whose commit a snapshot is.
const (
	SummaryJobID     = "icekeeper.job-id"
	SummaryStagedFor = "icekeeper.staged-for-job-id"
	// SummaryBatch numbers a batched job's commit (partial progress); a
	// job's one commit has none.
	SummaryBatch = "icekeeper.batch"
)

// ErrMalformed means a message or object could not be decoded; it is
// terminal (retrying will not help).
var ErrMalformed = errors.New("messages: malformed")

// Pin is the snapshot a job reads: the metadata file in which it is current.
type Pin struct {
	MetadataLocation string `json:"metadata_location"`
	SnapshotID       int64  `json:"snapshot_id"`
	SequenceNumber   int64  `json:"sequence_number"`
}

// Task asks a rewriter to rewrite one file group.
type Task struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Group   int    `json:"group"`
	Token   int64  `json:"lease_token"`
	Pin     Pin    `json:"pin"`
	// SpecID is the partition spec of every file in the group.
	SpecID int `json:"spec_id"`
	// Partition is a readable partition key, for logs.
	Partition string `json:"partition,omitempty"`
	// ScanTasks are codec.EncodeFileScanTask bytes, inline when small.
	ScanTasks [][]byte `json:"scan_tasks,omitempty"`
	// ScanTasksKey points at an S3 object holding ScanTasks (as JSON) when
	// they do not fit in one SQS message.
	ScanTasksKey string `json:"scan_tasks_key,omitempty"`
	InputFiles   int    `json:"input_files"`
	InputBytes   int64  `json:"input_bytes"`
	// TargetFileSize is the output file size the planner chose.
	TargetFileSize int64 `json:"target_file_size"`
	// OutputSpecID is the partition spec the new files are written in: the
	// table's default spec at S unless the owner asked otherwise. Absent
	// (tasks of older planners): the default spec of the pinned metadata.
	OutputSpecID *int `json:"output_spec_id,omitempty"`
	// SortOrderID, when set, makes this a sort compaction's group: the
	// rewriter sorts the group's rows by that sort order of the pinned
	// metadata (package sortrows) before writing them. The planner chose
	// the group so that its files overlap no file outside it
	// (binpack.PlanSorted).
	SortOrderID *int `json:"sort_order_id,omitempty"`
	// ZOrderFieldIDs, when set, makes this a z-order compaction's group:
	// the rewriter sorts the group's rows by the z-value of these columns
	// (package zorder) before writing them.
	ZOrderFieldIDs []int `json:"z_order_field_ids,omitempty"`
	// Delete, when set, makes this a deletion task instead of a rewrite:
	// delete one part of the job's deletions record (package deletions).
	// Group and the rewrite fields are then unused.
	Delete *DeleteTask `json:"delete,omitempty"`
	// List, when set, makes this a listing task of an orphan cleanup:
	// list one prefix of the table's location (package listing). Group and
	// the rewrite fields are then unused.
	List *ListTask `json:"list,omitempty"`
	// Deletes, when set, makes this a delete-file rewrite (a job of kind
	// rewrite-deletes): the rewriter carries the deletes of the group's
	// input delete files over to new delete files instead of rewriting
	// data. ScanTasks are then the live data files those deletes may
	// apply to, each with its delete files attached as the scan planned
	// them at S.
	Deletes *DeleteRewrite `json:"deletes,omitempty"`
	// Exchange, when set, makes this one side of a two-stage sort
	// (package exchange): a map group sorts its files' rows into scratch
	// pages, a reduce group merges one key range of every map's pages
	// into the table's new files. The sort is SortOrderID's.
	Exchange *Exchange `json:"exchange,omitempty"`
}

// Exchange roles.
const (
	ExchangeMap    = "map"
	ExchangeReduce = "reduce"
)

// Exchange describes a group's part in one two-stage sort of a job.
type Exchange struct {
	// ID numbers the job's exchanges (one per run of overlapping files too
	// large for one rewriter).
	ID   int    `json:"id"`
	Role string `json:"role"`
	// Maps and Reduces are the exchange's groups; reduce i merges range i.
	Maps    []int `json:"maps"`
	Reduces []int `json:"reduces"`
	// Reduce side, filled by the committer once every map is done: the
	// range boundaries on the first sort key (exchange.EncodeBoundaries;
	// none: one range), this group's range, and the maps' winning
	// descriptors, whose indexes list their pages.
	Boundaries     []byte   `json:"boundaries,omitempty"`
	Range          int      `json:"range,omitempty"`
	MapDescriptors []string `json:"map_descriptors,omitempty"`
	// RowLineage: the maps read and wrote the rows with Iceberg's row
	// lineage fields (v3), so the reduce writes them too.
	RowLineage bool `json:"row_lineage,omitempty"`
	// SortOrderID is the sort order of the pinned metadata the exchange
	// sorts by (the tasks' SortOrderID), or ZOrderFieldIDs the columns of
	// a z-order exchange, whose ranges are ranges of the z-value.
	SortOrderID    *int  `json:"sort_order_id,omitempty"`
	ZOrderFieldIDs []int `json:"z_order_field_ids,omitempty"`
	// ZOrderLower and ZOrderUpper are, per z-order column, the smallest
	// lower and the largest upper bound of the exchange's files (Iceberg's
	// single-value binary form; nil: a file has none): every map spreads
	// the column's keys over the same range (zorder.Norm), so their
	// z-values are comparable.
	ZOrderLower [][]byte `json:"z_order_lower,omitempty"`
	ZOrderUpper [][]byte `json:"z_order_upper,omitempty"`
}

// ExchangePage is one scratch page of a map.
type ExchangePage struct {
	Key   string `json:"key"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// ExchangeIndex is a map's output: its pages in key order, and each
// page's first and last value of the first sort key (Keys: an Arrow IPC
// stream of one batch, columns first and last, a row per page).
type ExchangeIndex struct {
	Pages []ExchangePage `json:"pages"`
	Keys  []byte         `json:"keys,omitempty"`
	Rows  int64          `json:"rows"`
}

// ExchangeOutput is what a map attempt of exchange ID wrote.
type ExchangeOutput struct {
	ID         int           `json:"id"`
	Index      ExchangeIndex `json:"index"`
	RowLineage bool          `json:"row_lineage,omitempty"`
}

// DeleteRewrite names a delete-file rewrite's input delete files.
type DeleteRewrite struct {
	// InputDeletes are the delete files the group replaces, as file keys
	// (DeleteFileKey), sorted.
	InputDeletes []string `json:"input_deletes"`
}

// PartitionKey identifies a file's partition: its spec and partition values.
func PartitionKey(df iceberg.DataFile) string {
	part := df.Partition()
	keys := make([]int, 0, len(part))
	for k := range part {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "spec=%d", df.SpecID())
	for _, k := range keys {
		fmt.Fprintf(&b, "|%d=%v", k, part[k])
	}
	return b.String()
}

// DeleteFileKey identifies a delete file: its path, and for a deletion
// vector the offset of its blob in the Puffin file (several DVs share one).
func DeleteFileKey(df iceberg.DataFile) string {
	if off := df.ContentOffset(); off != nil {
		return fmt.Sprintf("%s#%d", df.FilePath(), *off)
	}
	return df.FilePath()
}

// OutputSpec returns the spec the new files are written in, or -1 for the
// pinned metadata's default spec.
func (t Task) OutputSpec() int {
	if t.OutputSpecID == nil {
		return -1
	}
	return *t.OutputSpecID
}

// CommitRequest asks the committer to finish a job: commit it when every
// group is done, or abort it when Abort is set.
type CommitRequest struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	// DeletionsDone: the last deletion task of the job's fanned-out
	// deletions finished; the committer finishes the job.
	DeletionsDone bool `json:"deletions_done,omitempty"`
	// ListingDone: the last listing task of an orphan cleanup's fanned-out
	// listing finished; the committer merges what was found.
	ListingDone bool `json:"listing_done,omitempty"`
	// Batch asks for one batch of a batched job (partial progress,
	// numbered from 1); 0: the whole job, or for a batched job every batch
	// whose groups are settled.
	Batch  int    `json:"batch,omitempty"`
	Abort  bool   `json:"abort,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Exchange asks the committer to start exchange ID's reduces: every
	// map group of that two-stage sort is done (0 with ExchangeReady
	// false: none).
	ExchangeReady bool `json:"exchange_ready,omitempty"`
	Exchange      int  `json:"exchange,omitempty"`
	// Class is the kind of failure behind an abort request ("rewrite",
	// "planning", "stalled"), counted towards the table's backoff; empty
	// when the job's end is not the table's failure (its lease moved on).
	Class string `json:"class,omitempty"`
}

// Failure classes (CommitRequest.Class, and the committer's own).
const (
	FailRewrite   = "rewrite"
	FailPlanning  = "planning"
	FailStalled   = "stalled"
	FailInvariant = "invariant"
	FailTerminal  = "terminal"
	FailRetries   = "retries_exhausted"
)

// Plan is the planner's durable record of a job's groups.
type Plan struct {
	Version int         `json:"v"`
	JobID   string      `json:"job_id"`
	Table   string      `json:"table"`
	Pin     Pin         `json:"pin"`
	Groups  []PlanGroup `json:"groups"`
}

// PlanGroup lists one group's input data files.
type PlanGroup struct {
	Index     int    `json:"index"`
	SpecID    int    `json:"spec_id"`
	Partition string `json:"partition"`
	// OutputSpecID is the spec the group's new files are written in.
	OutputSpecID int      `json:"output_spec_id"`
	InputPaths   []string `json:"input_paths"`
	InputBytes   int64    `json:"input_bytes"`
	// InputRows is the input files' record count before deletes.
	InputRows int64 `json:"input_rows"`
	// InputDeletes (rewrite-deletes jobs only) are the delete files the
	// group replaces (DeleteFileKey, sorted); InputPaths are then the data
	// files they apply to, which stay.
	InputDeletes []string `json:"input_deletes,omitempty"`
	// Exchange is the group's part in a two-stage sort (its map group
	// reads InputPaths into scratch pages; its reduce groups read none
	// and write the new files). Its Boundaries, Range and MapDescriptors
	// are unset here: the committer fills them in the reduce tasks.
	Exchange *Exchange `json:"exchange,omitempty"`
}

// Counters are what one rewriter attempt measured.
type Counters struct {
	// RowsBeforeDeletes is the input files' record count.
	RowsBeforeDeletes int64 `json:"rows_before_deletes"`
	// RowsScanned is the rows the scan produced after applying deletes.
	RowsScanned int64 `json:"rows_scanned"`
	// RowsWritten is the sum of the new files' record counts.
	RowsWritten int64 `json:"rows_written"`
	// DeletedRows is RowsBeforeDeletes - RowsScanned, attributed by kind:
	// deletion vectors and file-scoped position deletes by their exact
	// metadata counts, the remainder to equality deletes.
	DeletedRowsDV       int64 `json:"deleted_rows_dv"`
	DeletedRowsPosition int64 `json:"deleted_rows_position"`
	DeletedRowsEquality int64 `json:"deleted_rows_equality"`
	DeleteFilesApplied  int   `json:"delete_files_applied"`
	FilesIn             int   `json:"files_in"`
	FilesOut            int   `json:"files_out"`
	BytesIn             int64 `json:"bytes_in"`
	BytesOut            int64 `json:"bytes_out"`
	DurationMillis      int64 `json:"duration_ms"`
	// SortRuns (sort compaction) is the number of sorted runs the rows
	// were merged from: 1 when the group fit in the rewriter's sort
	// window; SpilledBytes is what the runs took on local disk.
	SortRuns     int   `json:"sort_runs,omitempty"`
	SpilledBytes int64 `json:"spilled_bytes,omitempty"`
}

// Descriptor records what one rewriter attempt wrote for one group.
type Descriptor struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Group   int    `json:"group"`
	Attempt string `json:"attempt"`
	// SpecID is the partition spec of the new files.
	SpecID int `json:"spec_id"`
	// SchemaID is the schema the rows were read and the files written with
	// (the pinned metadata's current schema).
	SchemaID int `json:"schema_id"`
	// InputPaths are the data files the attempt rewrote.
	InputPaths []string `json:"input_paths"`
	// NewFiles are codec.EncodeDataFile bytes of the files written.
	NewFiles [][]byte `json:"new_files"`
	// InputDeletes (rewrite-deletes jobs only) are the delete files whose
	// deletes the attempt carried over (DeleteFileKey, sorted).
	InputDeletes []string `json:"input_deletes,omitempty"`
	// RowMapKey is where the attempt's row map is (package rowmap): where
	// each surviving input row went, for rebasing deletes committed during
	// the job; "" when the rows were sorted or repartitioned on the way.
	RowMapKey string `json:"row_map,omitempty"`
	// RowMap is the row map itself when it is at most the rewriter's
	// inline size (DefaultInlineRowMapBytes): a descriptor holds it or
	// names it in RowMapKey, never both.
	RowMap json.RawMessage `json:"row_map_inline,omitempty"`
	// Exchange (a two-stage sort's map group) is where the attempt wrote
	// its sorted rows instead of new files; its RowsWritten counts them.
	Exchange *ExchangeOutput `json:"exchange,omitempty"`
	Counters Counters        `json:"counters"`
}

// Encode returns v as JSON.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("messages: encode %T: %w", v, err)
	}
	return b, nil
}

// Decode parses JSON into v and checks its version field, and, for a
// message that says its own kind (Task, CommitRequest), that its fields
// say only one (Validate).
func Decode(data []byte, v any) error {
	var head struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrMalformed, v, err)
	}
	if head.Version != FormatVersion {
		return fmt.Errorf("%w: %T: format version %d, want %d", ErrMalformed, v, head.Version, FormatVersion)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrMalformed, v, err)
	}
	if m, ok := v.(interface{ Validate() error }); ok {
		return m.Validate()
	}
	return nil
}

// TableIdent parses a dotted table name ("ns.table", "a.b.table").
func TableIdent(name string) (table.Identifier, error) {
	parts := strings.Split(strings.TrimSpace(name), ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("%w: table %q: want namespace.table", ErrMalformed, name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%w: table %q: empty name part", ErrMalformed, name)
		}
	}
	return parts, nil
}

// TableName returns the dotted name of an identifier.
func TableName(ident table.Identifier) string { return strings.Join(ident, ".") }

// EncodeScanTasks encodes tasks with the pinned table's specs, schema and
// format version.
//
// iceberg-go's task codec frames a data file and its delete files with one
// partition spec. After partition evolution a task can carry delete files of
// another spec (a global equality delete written after the spec changed, an
// old-spec position delete), so a task whose delete files all share the data
// file's spec is plain codec bytes, and any other is a JSON envelope
// (scanTaskEnvelope, which starts with '{': never the first byte of the
// codec's Avro, whose first field is a non-negative length) holding the codec
// bytes of the data file with its same-spec deletes plus each other delete
// file encoded with its own spec.
func EncodeScanTasks(meta table.Metadata, tasks []table.FileScanTask) ([][]byte, error) {
	out := make([][]byte, 0, len(tasks))
	for _, t := range tasks {
		b, err := encodeScanTask(meta, t)
		if err != nil {
			return nil, fmt.Errorf("messages: encode scan task %s: %w", t.File.FilePath(), err)
		}
		out = append(out, b)
	}
	return out, nil
}

// scanTaskEnvelope carries a scan task whose delete files span specs.
type scanTaskEnvelope struct {
	// Task is the codec encoding of the task with only the delete files
	// that share the data file's spec.
	Task []byte `json:"task"`
	// Deletes are the other delete files, each with its own spec.
	Deletes []specDeleteFile `json:"deletes"`
}

type specDeleteFile struct {
	Kind   string `json:"kind"` // position, equality or dv
	SpecID int    `json:"spec_id"`
	File   []byte `json:"file"`
}

const (
	kindPosition = "position"
	kindEquality = "equality"
	kindDV       = "dv"
)

func encodeScanTask(meta table.Metadata, t table.FileScanTask) ([]byte, error) {
	dataSpec := t.File.SpecID()
	same := t
	same.DeleteFiles, same.EqualityDeleteFiles, same.DeletionVectorFiles = nil, nil, nil
	var other []specDeleteFile
	split := func(kind string, files []iceberg.DataFile, keep *[]iceberg.DataFile) error {
		for _, f := range files {
			if f.SpecID() == dataSpec {
				*keep = append(*keep, f)
				continue
			}
			b, err := encodeDataFile(meta, f)
			if err != nil {
				return err
			}
			other = append(other, specDeleteFile{Kind: kind, SpecID: int(f.SpecID()), File: b})
		}
		return nil
	}
	if err := split(kindPosition, t.DeleteFiles, &same.DeleteFiles); err != nil {
		return nil, err
	}
	if err := split(kindEquality, t.EqualityDeleteFiles, &same.EqualityDeleteFiles); err != nil {
		return nil, err
	}
	if err := split(kindDV, t.DeletionVectorFiles, &same.DeletionVectorFiles); err != nil {
		return nil, err
	}
	spec, schema, err := codecContext(meta, int(dataSpec))
	if err != nil {
		return nil, err
	}
	b, err := codec.EncodeFileScanTask(same, spec, schema, meta.Version())
	if err != nil {
		return nil, err
	}
	if len(other) == 0 {
		return b, nil
	}
	return json.Marshal(scanTaskEnvelope{Task: b, Deletes: other})
}

// DecodeScanTasks decodes tasks encoded by EncodeScanTasks. specID is the
// spec of every task's data file, which the caller knows from the plan (a
// group is one partition of one spec); delete files of other specs carry
// their own.
func DecodeScanTasks(meta table.Metadata, specID int, blobs [][]byte) ([]table.FileScanTask, error) {
	spec, schema, err := codecContext(meta, specID)
	if err != nil {
		return nil, err
	}
	out := make([]table.FileScanTask, 0, len(blobs))
	for i, b := range blobs {
		var env scanTaskEnvelope
		if len(b) > 0 && b[0] == '{' {
			if err := json.Unmarshal(b, &env); err != nil {
				return nil, fmt.Errorf("%w: scan task %d: %v", ErrMalformed, i, err)
			}
			b = env.Task
		}
		t, err := codec.DecodeFileScanTask(b, spec, schema, meta.Version())
		if err != nil {
			return nil, fmt.Errorf("%w: scan task %d: %v", ErrMalformed, i, err)
		}
		if int(t.File.SpecID()) != specID {
			return nil, fmt.Errorf("%w: scan task %d: data file has spec %d, the group %d", ErrMalformed, i, t.File.SpecID(), specID)
		}
		for _, d := range env.Deletes {
			f, err := decodeDataFile(meta, d.SpecID, d.File)
			if err != nil {
				return nil, fmt.Errorf("%w: scan task %d: delete file: %v", ErrMalformed, i, err)
			}
			switch d.Kind {
			case kindPosition:
				t.DeleteFiles = append(t.DeleteFiles, f)
			case kindEquality:
				t.EqualityDeleteFiles = append(t.EqualityDeleteFiles, f)
			case kindDV:
				t.DeletionVectorFiles = append(t.DeletionVectorFiles, f)
			default:
				return nil, fmt.Errorf("%w: scan task %d: unknown delete kind %q", ErrMalformed, i, d.Kind)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func encodeDataFile(meta table.Metadata, f iceberg.DataFile) ([]byte, error) {
	spec, schema, err := codecContext(meta, int(f.SpecID()))
	if err != nil {
		return nil, err
	}
	b, err := codec.EncodeDataFile(f, spec, schema, meta.Version())
	if err != nil {
		return nil, fmt.Errorf("messages: encode data file %s: %w", f.FilePath(), err)
	}
	return b, nil
}

func decodeDataFile(meta table.Metadata, specID int, b []byte) (iceberg.DataFile, error) {
	spec, schema, err := codecContext(meta, specID)
	if err != nil {
		return nil, err
	}
	f, err := codec.DecodeDataFile(b, spec, schema, meta.Version())
	if err != nil {
		return nil, err
	}
	if int(f.SpecID()) != specID {
		return nil, fmt.Errorf("%w: data file %s has spec %d, want %d", ErrMalformed, f.FilePath(), f.SpecID(), specID)
	}
	return f, nil
}

// EncodeDataFiles encodes data files, each with its own spec from meta.
func EncodeDataFiles(meta table.Metadata, files []iceberg.DataFile) ([][]byte, error) {
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		b, err := encodeDataFile(meta, f)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// DecodeDataFiles decodes files encoded by EncodeDataFiles with spec specID.
func DecodeDataFiles(meta table.Metadata, specID int, blobs [][]byte) ([]iceberg.DataFile, error) {
	out := make([]iceberg.DataFile, 0, len(blobs))
	for i, b := range blobs {
		f, err := decodeDataFile(meta, specID, b)
		if err != nil {
			return nil, fmt.Errorf("%w: data file %d: %v", ErrMalformed, i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// codecContext is the spec and schema a file of spec specID is encoded and
// decoded with: the table's current schema when it still has every source
// column of the spec, else the newest schema that does (a spec's source
// column may have been dropped since). Encoder and decoder read the same
// metadata, so they agree.
func codecContext(meta table.Metadata, specID int) (iceberg.PartitionSpec, *iceberg.Schema, error) {
	spec, err := specOf(meta, specID)
	if err != nil {
		return spec, nil, err
	}
	hasSources := func(sc *iceberg.Schema) bool {
		for _, f := range spec.Fields() {
			if _, void := f.Transform.(iceberg.VoidTransform); void {
				continue // a removed field (v1) reads nothing
			}
			for _, id := range f.SourceIDs {
				if _, ok := sc.FindFieldByID(id); !ok {
					return false
				}
			}
		}
		return true
	}
	if cur := meta.CurrentSchema(); hasSources(cur) {
		return spec, cur, nil
	}
	schemas := meta.Schemas()
	for i := len(schemas) - 1; i >= 0; i-- {
		if hasSources(schemas[i]) {
			return spec, schemas[i], nil
		}
	}
	return spec, nil, fmt.Errorf("%w: no schema has every source column of partition spec %d", ErrMalformed, specID)
}

func specOf(meta table.Metadata, id int) (iceberg.PartitionSpec, error) {
	for _, s := range meta.PartitionSpecs() {
		if s.ID() == id {
			return s, nil
		}
	}
	return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition spec %d not in table metadata", ErrMalformed, id)
}

// SortedCopy returns a sorted copy of paths.
func SortedCopy(paths []string) []string {
	out := append([]string(nil), paths...)
	sort.Strings(out)
	return out
}

// ScanTaskList is the S3 object a Task's ScanTasksKey points at.
type ScanTaskList struct {
	Version   int      `json:"v"`
	ScanTasks [][]byte `json:"scan_tasks"`
}

// ID is a 64-bit Iceberg id (a snapshot id) in JSON meant for people and
// other tools: written as a decimal string, because JSON numbers above 2^53
// lose digits in JavaScript and jq 1.6; read from a string or, for records
// written before, a number.
type ID int64

// MarshalJSON writes the id as a string.
func (id ID) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatInt(int64(id), 10))
}

// UnmarshalJSON reads a string or a number.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*id = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: id %s: %v", ErrMalformed, b, err)
	}
	*id = ID(n)
	return nil
}
