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
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
)

// FormatVersion is the version of every format in this package.
const FormatVersion = 1

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
}

// CommitRequest asks the committer to finish a job: commit it when every
// group is done, or abort it when Abort is set.
type CommitRequest struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Abort   bool   `json:"abort,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

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
	Index      int      `json:"index"`
	SpecID     int      `json:"spec_id"`
	Partition  string   `json:"partition"`
	InputPaths []string `json:"input_paths"`
	InputBytes int64    `json:"input_bytes"`
	// InputRows is the input files' record count before deletes.
	InputRows int64 `json:"input_rows"`
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
}

// Descriptor records what one rewriter attempt wrote for one group.
type Descriptor struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Group   int    `json:"group"`
	Attempt string `json:"attempt"`
	// SpecID is the partition spec of the new files.
	SpecID int `json:"spec_id"`
	// InputPaths are the data files the attempt rewrote.
	InputPaths []string `json:"input_paths"`
	// NewFiles are codec.EncodeDataFile bytes of the files written.
	NewFiles [][]byte `json:"new_files"`
	Counters Counters `json:"counters"`
}

// Encode returns v as JSON.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("messages: encode %T: %w", v, err)
	}
	return b, nil
}

// Decode parses JSON into v and checks its version field.
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

// EncodeScanTasks encodes tasks with the pinned table's spec, schema and
// format version.
func EncodeScanTasks(meta table.Metadata, tasks []table.FileScanTask) ([][]byte, error) {
	out := make([][]byte, 0, len(tasks))
	for _, t := range tasks {
		spec, err := specOf(meta, int(t.File.SpecID()))
		if err != nil {
			return nil, err
		}
		b, err := codec.EncodeFileScanTask(t, spec, meta.CurrentSchema(), meta.Version())
		if err != nil {
			return nil, fmt.Errorf("messages: encode scan task %s: %w", t.File.FilePath(), err)
		}
		out = append(out, b)
	}
	return out, nil
}

// DecodeScanTasks decodes tasks encoded by EncodeScanTasks. specID is each
// task's spec, which the caller knows from the plan; tasks of one group share
// a partition and so a spec.
func DecodeScanTasks(meta table.Metadata, specID int, blobs [][]byte) ([]table.FileScanTask, error) {
	spec, err := specOf(meta, specID)
	if err != nil {
		return nil, err
	}
	out := make([]table.FileScanTask, 0, len(blobs))
	for i, b := range blobs {
		t, err := codec.DecodeFileScanTask(b, spec, meta.CurrentSchema(), meta.Version())
		if err != nil {
			return nil, fmt.Errorf("%w: scan task %d: %v", ErrMalformed, i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// EncodeDataFiles encodes data files with their spec from meta.
func EncodeDataFiles(meta table.Metadata, files []iceberg.DataFile) ([][]byte, error) {
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		spec, err := specOf(meta, int(f.SpecID()))
		if err != nil {
			return nil, err
		}
		b, err := codec.EncodeDataFile(f, spec, meta.CurrentSchema(), meta.Version())
		if err != nil {
			return nil, fmt.Errorf("messages: encode data file %s: %w", f.FilePath(), err)
		}
		out = append(out, b)
	}
	return out, nil
}

// DecodeDataFiles decodes files encoded by EncodeDataFiles with spec specID.
func DecodeDataFiles(meta table.Metadata, specID int, blobs [][]byte) ([]iceberg.DataFile, error) {
	spec, err := specOf(meta, specID)
	if err != nil {
		return nil, err
	}
	out := make([]iceberg.DataFile, 0, len(blobs))
	for i, b := range blobs {
		f, err := codec.DecodeDataFile(b, spec, meta.CurrentSchema(), meta.Version())
		if err != nil {
			return nil, fmt.Errorf("%w: data file %d: %v", ErrMalformed, i, err)
		}
		out = append(out, f)
	}
	return out, nil
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
