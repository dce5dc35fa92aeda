package filescan

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// File is a data or delete file as Plan keeps it: about 100 bytes and its
// path, its partition tuple shared with the other files of its partition.
// Its column statistics are the bounds Plan was asked for (and a position
// delete file's file_path bounds) and, when asked for, a data file's column
// sizes of the equality columns of the deletes that apply to it; the other
// statistics are nil.
type File struct {
	path      string
	partKey   string
	part      map[int]any // shared: read only
	count     int64
	size      int64
	firstRow  int64 // -1: none
	spec      int32
	sortOrder int32 // -1: none
	content   iceberg.ManifestEntryContent
	young     bool // added at or after Options.AddedSince; in content's padding
	format    iceberg.FileFormat
	bounds    *fileBounds
	ext       *extra // what only delete files (and encrypted files) have
}

type fileBounds struct {
	lower, upper map[int][]byte
	// namesNone: a position delete file whose file_path values are all
	// null or NaN names no file.
	namesNone bool
}

type extra struct {
	columnSizes    map[int]int64 // a data file's, of its equality deletes' columns
	equalityIDs    []int
	ref            string
	offset, length int64
	hasOffset      bool
	hasLength      bool
	keyMetadata    []byte
}

var _ iceberg.DataFile = (*File)(nil)
var _ iceberg.AvroEntryMarshaler = (*File)(nil)

func (f *File) ContentType() iceberg.ManifestEntryContent { return f.content }
func (f *File) FilePath() string                          { return f.path }
func (f *File) FileFormat() iceberg.FileFormat            { return f.format }
func (f *File) Partition() map[int]any                    { return f.part }
func (f *File) Count() int64                              { return f.count }
func (f *File) FileSizeBytes() int64                      { return f.size }
func (f *File) ValueCounts() map[int]int64                { return nil }
func (f *File) NullValueCounts() map[int]int64            { return nil }
func (f *File) NaNValueCounts() map[int]int64             { return nil }
func (f *File) DistinctValueCounts() map[int]int64        { return nil }
func (f *File) SplitOffsets() []int64                     { return nil }
func (f *File) SpecID() int32                             { return f.spec }

// ColumnSizes are the sizes Plan kept (Options.EqualityColumnSizes), or nil.
func (f *File) ColumnSizes() map[int]int64 {
	if f.ext == nil {
		return nil
	}
	return f.ext.columnSizes
}

// keepColumnSizes keeps, of a data file's column sizes, those of the
// equality field ids of deletes.
func (f *File) keepColumnSizes(sizes map[int]int64, deletes []iceberg.DataFile) {
	var kept map[int]int64
	for _, d := range deletes {
		for _, id := range d.EqualityFieldIDs() {
			if n, ok := sizes[id]; ok {
				if kept == nil {
					kept = map[int]int64{}
				}
				kept[id] = n
			}
		}
	}
	if kept == nil {
		return
	}
	if f.ext == nil {
		f.ext = &extra{}
	}
	f.ext.columnSizes = kept
}

// AddedSince reports whether df is a File that Plan marked as added at
// or after Options.AddedSince.
func AddedSince(df iceberg.DataFile) bool {
	f, ok := df.(*File)
	return ok && f.young
}

// PartitionKey is the file's spec and partition tuple (PartitionKey).
func (f *File) PartitionKey() string { return f.partKey }

func (f *File) LowerBoundValues() map[int][]byte {
	if f.bounds == nil {
		return nil
	}
	return f.bounds.lower
}

func (f *File) UpperBoundValues() map[int][]byte {
	if f.bounds == nil {
		return nil
	}
	return f.bounds.upper
}

func (f *File) KeyMetadata() []byte {
	if f.ext == nil {
		return nil
	}
	return f.ext.keyMetadata
}

func (f *File) EqualityFieldIDs() []int {
	if f.ext == nil {
		return nil
	}
	return f.ext.equalityIDs
}

func (f *File) SortOrderID() *int {
	if f.sortOrder < 0 {
		return nil
	}
	id := int(f.sortOrder)
	return &id
}

func (f *File) FirstRowID() *int64 {
	if f.firstRow < 0 {
		return nil
	}
	id := f.firstRow
	return &id
}

func (f *File) ReferencedDataFile() *string {
	if f.ext == nil || f.ext.ref == "" {
		return nil
	}
	ref := f.ext.ref
	return &ref
}

func (f *File) ContentOffset() *int64 {
	if f.ext == nil || !f.ext.hasOffset {
		return nil
	}
	n := f.ext.offset
	return &n
}

func (f *File) ContentSizeInBytes() *int64 {
	if f.ext == nil || !f.ext.hasLength {
		return nil
	}
	n := f.ext.length
	return &n
}

// mayName reports whether a position delete file's file_path bounds admit
// path (iceberg-go's filePathMayMatch).
func (f *File) mayName(path string) bool {
	if f.count == 0 {
		return false
	}
	if f.bounds == nil {
		return true
	}
	if f.bounds.namesNone {
		return false
	}
	if lo := f.bounds.lower[PathFieldID]; lo != nil && string(lo) > path {
		return false
	}
	if hi := f.bounds.upper[PathFieldID]; hi != nil && string(hi) < path {
		return false
	}
	return true
}

// Full is the file as an iceberg-go data file with the fields File keeps.
func (f *File) Full(spec iceberg.PartitionSpec) (iceberg.DataFile, error) {
	if int(f.spec) != spec.ID() {
		return nil, fmt.Errorf("filescan: %s is of partition spec %d, not %d", f.path, f.spec, spec.ID())
	}
	b, err := iceberg.NewDataFileBuilder(spec, f.content, f.path, f.format, f.part, nil, nil, f.count, f.size)
	if err != nil {
		return nil, fmt.Errorf("filescan: %s: %w", f.path, err)
	}
	if f.bounds != nil {
		b.LowerBoundValues(f.bounds.lower).UpperBoundValues(f.bounds.upper)
	}
	if f.sortOrder >= 0 {
		b.SortOrderID(int(f.sortOrder))
	}
	if f.firstRow >= 0 {
		b.FirstRowID(f.firstRow)
	}
	if e := f.ext; e != nil {
		if e.columnSizes != nil {
			b.ColumnSizes(e.columnSizes)
		}
		if e.equalityIDs != nil {
			b.EqualityFieldIDs(e.equalityIDs)
		}
		if e.ref != "" {
			b.ReferencedDataFile(e.ref)
		}
		if e.hasOffset {
			b.ContentOffset(e.offset)
		}
		if e.hasLength {
			b.ContentSizeInBytes(e.length)
		}
		if e.keyMetadata != nil {
			b.KeyMetadata(e.keyMetadata)
		}
	}
	return b.Build(), nil
}

// MarshalAvroEntry encodes the file as codec.EncodeDataFile does a data
// file read from a manifest, with the fields File keeps.
func (f *File) MarshalAvroEntry(spec iceberg.PartitionSpec, schema *iceberg.Schema, version int) ([]byte, error) {
	full, err := f.Full(spec)
	if err != nil {
		return nil, err
	}
	m, ok := full.(iceberg.AvroEntryMarshaler)
	if !ok {
		return nil, fmt.Errorf("filescan: iceberg-go's data file %T does not encode", full)
	}
	return m.MarshalAvroEntry(spec, schema, version)
}
