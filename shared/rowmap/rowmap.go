// Package rowmap records where a compaction group's surviving rows went, so
// that the committer can rebase a delete committed during the job (a
// position delete or deletion vector on an input file) onto the job's new
// files.
//
// A group's rows are read file by file in a fixed order (iceberg-go's scan
// emits the rows of task i before those of task i+1, each file's in
// position order) and written, in that order, into new files one after
// another (one clustered or unpartitioned rolling writer, no sort). So the
// k-th surviving row of the stream is row k - start(O) of the new file O
// whose rows span k, and the surviving rows of an input file F are its
// positions minus the ones the scan dropped. A Map records exactly that:
// the input files in stream order with the positions their position
// deletes and deletion vectors dropped, and the new files in the order they
// were filled. Input files that also had equality deletes applied record
// their scan task instead of the rows those deletes dropped; the committer
// works them out only when it needs them (Resolve), with iceberg-go's own
// reader.
//
// Invariants:
//   - A Map is recorded only for a group whose rows are neither sorted nor
//     repartitioned on the way (output order is input order).
//   - Resolve checks that the surviving rows of the inputs add up to the
//     rows of the new files; a Map that does not add up is refused, and the
//     committer aborts rather than guess.
//   - Locate never maps a position the scan at the pinned snapshot already
//     dropped, or one past the file's record count: those delete nothing.
package rowmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/messages"
)

// ErrUnusable: the map does not add up or cannot be decoded (never
// retryable).
var ErrUnusable = errors.New("rowmap: unusable row map")

// Map is one group attempt's row map (FORMATS.md, "Row map").
type Map struct {
	Version int    `json:"v"`
	JobID   string `json:"job_id"`
	Group   int    `json:"group"`
	Attempt string `json:"attempt"`
	// SpecID is the input files' partition spec (to decode equality tasks).
	SpecID int `json:"spec_id"`
	// Inputs are the group's input files in the order their rows were
	// written.
	Inputs []Input `json:"inputs"`
	// Outputs are the new files in the order they were filled.
	Outputs []Output `json:"outputs"`
}

// Input is one input data file.
type Input struct {
	Path string `json:"path"`
	// Rows is the file's record count.
	Rows int64 `json:"rows"`
	// Dropped are the positions its position deletes and deletion vectors
	// dropped at the pinned snapshot (a portable 64-bit Roaring bitmap, the
	// serialization of iceberg-go's RoaringPositionBitmap); empty for none.
	Dropped []byte `json:"dropped,omitempty"`
	// EqualityTask, for a file that had equality deletes applied, is its
	// scan task (messages.EncodeScanTasks): the rows those deletes dropped
	// are worked out from it when needed.
	EqualityTask []byte `json:"equality_task,omitempty"`
}

// Output is one new file.
type Output struct {
	Path string `json:"path"`
	Rows int64  `json:"rows"`
}

// Encode serializes a position bitmap for Input.Dropped (nil for none).
func Encode(bm *dv.RoaringPositionBitmap) ([]byte, error) {
	if bm == nil || bm.IsEmpty() {
		return nil, nil
	}
	var b bytes.Buffer
	if err := bm.Serialize(&b); err != nil {
		return nil, fmt.Errorf("rowmap: serialize positions: %w", err)
	}
	return b.Bytes(), nil
}

// Resolved is a map ready to translate positions.
type Resolved struct {
	inputs  map[string]resolvedInput
	outputs []Output
	// ends[i] is the stream offset just past output i.
	ends []int64
}

type resolvedInput struct {
	rows    int64
	dropped *dv.RoaringPositionBitmap
	// start is the stream offset of the file's first surviving row.
	start int64
}

// EqualityResolver returns the positions of t's data file that its
// equality delete files drop (deletefiles.EqualityPositions).
type EqualityResolver func(ctx context.Context, t table.FileScanTask) (*dv.RoaringPositionBitmap, error)

// Resolve decodes m against the pinned metadata, works out the rows
// equality deletes dropped where it must, and checks that the inputs'
// surviving rows add up to the outputs' rows.
func Resolve(ctx context.Context, m Map, meta table.Metadata, eq EqualityResolver) (*Resolved, error) {
	r := &Resolved{inputs: make(map[string]resolvedInput, len(m.Inputs)), outputs: m.Outputs}
	var offset int64
	for _, in := range m.Inputs {
		dropped := dv.NewRoaringPositionBitmap()
		if len(in.Dropped) > 0 {
			bm, err := dv.DeserializeRoaringPositionBitmap(in.Dropped)
			if err != nil {
				return nil, fmt.Errorf("%w: dropped positions of %s: %v", ErrUnusable, in.Path, err)
			}
			dropped = bm
		}
		if len(in.EqualityTask) > 0 {
			tasks, err := messages.DecodeScanTasks(meta, m.SpecID, [][]byte{in.EqualityTask})
			if err != nil || len(tasks) != 1 || tasks[0].File.FilePath() != in.Path {
				return nil, fmt.Errorf("%w: equality task of %s: %v", ErrUnusable, in.Path, err)
			}
			byEq, err := eq(ctx, tasks[0])
			if err != nil {
				return nil, fmt.Errorf("rows the equality deletes of %s dropped: %w", in.Path, err)
			}
			dropped.Or(byEq)
		}
		if _, dup := r.inputs[in.Path]; dup {
			return nil, fmt.Errorf("%w: input %s listed twice", ErrUnusable, in.Path)
		}
		for p := range dropped.Positions() {
			if int64(p) >= in.Rows {
				return nil, fmt.Errorf("%w: %s: dropped position %d is past its %d rows", ErrUnusable, in.Path, p, in.Rows)
			}
		}
		r.inputs[in.Path] = resolvedInput{rows: in.Rows, dropped: dropped, start: offset}
		offset += in.Rows - dropped.Cardinality()
	}
	var total int64
	for _, o := range m.Outputs {
		total += o.Rows
		r.ends = append(r.ends, total)
	}
	if total != offset {
		return nil, fmt.Errorf("%w: the inputs' surviving rows add up to %d, the new files hold %d", ErrUnusable, offset, total)
	}
	return r, nil
}

// Has reports whether path is one of the map's inputs.
func (r *Resolved) Has(path string) bool {
	_, ok := r.inputs[path]
	return ok
}

// Dropped reports whether the scan at the pinned snapshot dropped position
// pos of input path (or pos is past its rows).
func (r *Resolved) Dropped(path string, pos int64) bool {
	in, ok := r.inputs[path]
	return !ok || pos < 0 || pos >= in.rows || in.dropped.Contains(uint64(pos))
}

// Located is where one surviving row went.
type Located struct {
	Output string
	Pos    int64
}

// Locate translates positions of input path into new-file positions. It
// skips positions that delete nothing in the new files: ones the scan had
// already dropped and ones past the file's rows.
func (r *Resolved) Locate(path string, positions []int64) ([]Located, error) {
	in, ok := r.inputs[path]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not an input of this map", ErrUnusable, path)
	}
	ps := append([]int64(nil), positions...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	next, stop := iter.Pull(in.dropped.Positions())
	defer stop()
	var below int64 // dropped positions below the current one
	d, more := next()
	var out []Located
	for i, p := range ps {
		if p < 0 || p >= in.rows || (i > 0 && p == ps[i-1]) {
			continue
		}
		for more && int64(d) < p {
			below++
			d, more = next()
		}
		if more && int64(d) == p {
			continue // already dropped
		}
		k := in.start + p - below
		o := sort.Search(len(r.ends), func(i int) bool { return r.ends[i] > k })
		if o == len(r.ends) {
			return nil, fmt.Errorf("%w: %s position %d maps to row %d, past the new files' %d rows", ErrUnusable, path, p, k, r.total())
		}
		first := int64(0)
		if o > 0 {
			first = r.ends[o-1]
		}
		out = append(out, Located{Output: r.outputs[o].Path, Pos: k - first})
	}
	return out, nil
}

func (r *Resolved) total() int64 {
	if len(r.ends) == 0 {
		return 0
	}
	return r.ends[len(r.ends)-1]
}

// Outputs returns the new files' paths.
func (r *Resolved) Outputs() []string {
	out := make([]string, len(r.outputs))
	for i, o := range r.outputs {
		out[i] = o.Path
	}
	return out
}

// Build makes a group attempt's map from its input tasks in stream order,
// the positions their position deletes and deletion vectors dropped (one
// per task), and the files written in order. Tasks with equality deletes
// record their scan task.
func Build(jobID string, group int, attempt string, specID int, meta table.Metadata, tasks []table.FileScanTask, dropped []*dv.RoaringPositionBitmap, written []iceberg.DataFile) (Map, error) {
	m := Map{Version: messages.FormatVersion, JobID: jobID, Group: group, Attempt: attempt, SpecID: specID}
	if len(dropped) != len(tasks) {
		return m, fmt.Errorf("rowmap: %d tasks, %d dropped sets", len(tasks), len(dropped))
	}
	for i, t := range tasks {
		b, err := Encode(dropped[i])
		if err != nil {
			return m, err
		}
		in := Input{Path: t.File.FilePath(), Rows: t.File.Count(), Dropped: b}
		if len(t.EqualityDeleteFiles) > 0 {
			enc, err := messages.EncodeScanTasks(meta, []table.FileScanTask{t})
			if err != nil {
				return m, fmt.Errorf("rowmap: encode the scan task of %s: %w", t.File.FilePath(), err)
			}
			in.EqualityTask = enc[0]
		}
		m.Inputs = append(m.Inputs, in)
	}
	for _, f := range written {
		m.Outputs = append(m.Outputs, Output{Path: f.FilePath(), Rows: f.Count()})
	}
	return m, nil
}
