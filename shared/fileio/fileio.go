// Package fileio is the table file IO icekeeper's workers read and write
// through: iceberg-go's own (io.LoadFS, any scheme it registers), with
// fewer requests to an object store.
//
// On S3, iceberg-go's blob file IO opens a file with one GET of the whole
// object and then serves every ReadAt (a Parquet footer, each column chunk)
// with another ranged GET, and it uploads new files in the transfer
// manager's default parts. For the small files compaction exists to merge,
// most of their cost is those requests. Here:
//
//   - a file no larger than Options.WholeReadBytes is read whole from the
//     body of the GET that opened it and served from memory: one GET per
//     small file, whatever the reader asks for;
//   - the files a reader is about to open in turn can be read ahead,
//     a few at a time (ReadAhead, readahead.go), so that S3's latency
//     is paid once for several files rather than once for each;
//   - new files are uploaded in parts of Options.PartBytes with
//     Options.PartConcurrency parts in flight: a 256 MB file is 4 parts
//     of 64 MB instead of 32 of 8 MB. A file smaller than one part is one
//     PutObject.
//
// A caller that reads some files twice (a rewriter reads a group's
// position deletes and deletion vectors for its row map, then iceberg-go's
// scan reads them again) asks for them to be kept (Retain): the IOs of one
// pinned table share a Cache, and a kept file's second open costs no
// request. The cache holds at most its budget; past it, files are read
// again.
//
// Metadata files, manifest lists and manifests are immutable in Iceberg:
// the process keeps the ones it read (up to DefaultMetadataBytes, least
// recently read dropped first) for every IO and table it opens, so a
// committer's repeated manifest walks and a warm planner's sweeps read
// each once.
//
// Only reads and uploads change: every other call (remove, list, bulk
// delete) is iceberg-go's. Local files (file://) are left as they are.
package fileio

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	iofs "io/fs"
	pathpkg "path"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"

	// Table file IO for s3:// locations (iceberg-go registers schemes this
	// way): workers open pinned tables without any catalog.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Defaults.
const (
	// DefaultWholeReadBytes: files up to 16 MiB are read in one request.
	// A rewriter opens a few files at a time, so this bounds the memory
	// it holds for whole reads to a few times 16 MiB.
	DefaultWholeReadBytes = 16 << 20
	// DefaultPartBytes: 64 MiB upload parts (S3 allows 5 MiB to 5 GiB).
	// Against 32 MiB, on 1 GB of 1 MB files with S3's latency held: 29
	// PUT-class requests instead of 45 and 0.87x the rewriter's time in
	// its handler, at 1.02x its peak RSS (docs/PERFORMANCE.md, "Reading
	// ahead and larger parts"); 128 MiB saved 8 more requests for two
	// more 64 MiB buffers.
	DefaultPartBytes = 64 << 20
	// DefaultPartConcurrency: parts in flight per upload; each holds a
	// part's buffer.
	DefaultPartConcurrency = 2
)

// Options tune the IO; zero values take the defaults. WholeReadBytes < 0
// turns whole reads off.
type Options struct {
	WholeReadBytes  int64
	PartBytes       int
	PartConcurrency int
	// ReadAheadFiles and ReadAheadBytes bound ReadAhead: the files read
	// at once, and the bytes read and not yet opened. ReadAheadFiles < 0
	// turns it off.
	ReadAheadFiles int
	ReadAheadBytes int64
}

func (o Options) withDefaults() Options {
	if o.WholeReadBytes == 0 {
		o.WholeReadBytes = DefaultWholeReadBytes
	}
	if o.PartBytes == 0 {
		o.PartBytes = DefaultPartBytes
	}
	if o.PartConcurrency == 0 {
		o.PartConcurrency = DefaultPartConcurrency
	}
	if o.ReadAheadFiles == 0 {
		o.ReadAheadFiles = DefaultReadAheadFiles
	}
	if o.ReadAheadBytes == 0 {
		o.ReadAheadBytes = DefaultReadAheadBytes
	}
	return o
}

// Validate reports options S3 cannot take.
func (o Options) Validate() error {
	if o.PartBytes != 0 && o.PartBytes < 5<<20 {
		return fmt.Errorf("fileio: upload parts of %d bytes: S3 needs at least 5 MiB", o.PartBytes)
	}
	if o.PartConcurrency < 0 {
		return fmt.Errorf("fileio: %d parts in flight: want a positive number", o.PartConcurrency)
	}
	return nil
}

// LoadFunc is io.LoadFSFunc with the IO wrapped (for table.NewFromLocation).
// Every IO it loads shares one Cache.
func LoadFunc(props map[string]string, location string, o Options) func(ctx context.Context) (icebergio.IO, error) {
	load := icebergio.LoadFSFunc(props, location)
	cache := NewCache(DefaultCacheBytes)
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := load(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(ctx, fs, o, cache), nil
	}
}

// Wrap returns fs with fewer object-store requests, or fs itself when it
// is not an object store's IO.
func Wrap(ctx context.Context, fs icebergio.IO, o Options) icebergio.IO {
	return wrap(ctx, fs, o, NewCache(DefaultCacheBytes))
}

func wrap(ctx context.Context, fs icebergio.IO, o Options, cache *Cache) icebergio.IO {
	b, ok := fs.(*blobfs.FileIO)
	if !ok {
		return fs
	}
	return &objectIO{FileIO: b, ctx: ctx, o: o.withDefaults(), cache: cache}
}

// DefaultCacheBytes is the most a Cache keeps.
const DefaultCacheBytes = 64 << 20

// Cache keeps, for the IOs that share it, the contents of the files asked
// to be kept (Retain) once they have been read whole.
type Cache struct {
	mu         sync.Mutex
	want       map[string]bool
	data       map[string][]byte
	size, most int64
	// ahead is the files being read ahead for these IOs (ReadAhead).
	ahead *readAhead
}

// NewCache returns a cache that keeps at most most bytes.
func NewCache(most int64) *Cache {
	return &Cache{want: map[string]bool{}, data: map[string][]byte{}, most: most}
}

// Retain asks fs to keep the named files once read (no-op for an IO this
// package did not wrap).
func Retain(fs icebergio.IO, names ...string) {
	s, ok := fs.(*objectIO)
	if !ok {
		return
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	for _, n := range names {
		s.cache.want[n] = true
	}
}

func (c *Cache) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[name]
	return b, ok
}

func (c *Cache) offer(name string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[name]; ok || !c.want[name] || c.size+int64(len(b)) > c.most {
		return
	}
	c.data[name], c.size = b, c.size+int64(len(b))
}

// objectIO is a blob file IO (every method of iceberg-go's, so its
// optional interfaces stay) with its own Open and Create.
type objectIO struct {
	*blobfs.FileIO
	ctx   context.Context
	o     Options
	cache *Cache
}

// Open opens name with one GET (none for a kept file read before); a file
// no larger than WholeReadBytes is read whole from that GET's body and
// served from memory.
func (s *objectIO) Open(name string) (icebergio.File, error) {
	if b, ok := s.cache.get(name); ok {
		return &wholeFile{Reader: bytes.NewReader(b), info: fileInfo{name: pathpkg.Base(name), size: int64(len(b))}}, nil
	}
	keep := immutable(name)
	if keep {
		if b, ok := metadata.get(name); ok {
			return &wholeFile{Reader: bytes.NewReader(b), info: fileInfo{name: pathpkg.Base(name), size: int64(len(b))}}, nil
		}
	}
	if b, info, ok := s.cache.takeAhead(name); ok {
		s.cache.offer(name, b)
		return &wholeFile{Reader: bytes.NewReader(b), info: info}, nil
	}
	f, err := s.FileIO.Open(name)
	if err != nil || s.o.WholeReadBytes < 0 {
		return f, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() > s.o.WholeReadBytes {
		return f, nil
	}
	data, err := readAll(name, f, st.Size())
	if err != nil {
		return nil, err
	}
	s.cache.offer(name, data)
	if keep {
		metadata.put(name, data)
	}
	return &wholeFile{Reader: bytes.NewReader(data), info: fileInfo{name: st.Name(), size: st.Size(), mod: st.ModTime()}}, nil
}

// ReadFile reads name whole (iceberg-go reads metadata files this way),
// from the process's cache when it is an immutable metadata file read
// before.
func (s *objectIO) ReadFile(name string) ([]byte, error) {
	keep := immutable(name)
	if keep {
		if b, ok := metadata.get(name); ok {
			return bytes.Clone(b), nil
		}
	}
	b, err := s.FileIO.ReadFile(name)
	if err == nil && keep {
		metadata.put(name, bytes.Clone(b))
	}
	return b, err
}

// Create uploads name in parts of PartBytes.
func (s *objectIO) Create(name string) (icebergio.FileWriter, error) {
	return s.FileIO.NewWriter(s.ctx, name, true, &blob.WriterOptions{BufferSize: s.o.PartBytes, MaxConcurrency: s.o.PartConcurrency})
}

// wholeFile is a file read whole into memory.
type wholeFile struct {
	*bytes.Reader
	info fileInfo
}

func (f *wholeFile) Stat() (iofs.FileInfo, error) { return f.info, nil }
func (f *wholeFile) Close() error                 { return nil }

type fileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i fileInfo) Name() string        { return i.name }
func (i fileInfo) Size() int64         { return i.size }
func (i fileInfo) Mode() iofs.FileMode { return iofs.ModeIrregular }
func (i fileInfo) ModTime() time.Time  { return i.mod }
func (i fileInfo) IsDir() bool         { return false }
func (i fileInfo) Sys() any            { return nil }

// Iceberg never rewrites a metadata file, manifest list or manifest in
// place: each new one gets a new name (a UUID, or a new version number in
// the metadata file's). Such files can be kept for as long as the process
// lives, and read once however many requests, tables and commit rounds
// read them again. The committer reads a job's manifests several times
// (the files live at S, the dead deletes, every snapshot since S, and
// again in each conflict round); the planner reads unchanged manifests on
// every sweep of a warm function.

// immutable reports whether name is a metadata file, manifest list or
// manifest (never version-hint.text, which a Hadoop catalog rewrites).
func immutable(name string) bool {
	if !strings.Contains(name, "/metadata/") {
		return false
	}
	return strings.HasSuffix(name, ".avro") || strings.HasSuffix(name, ".metadata.json") || strings.HasSuffix(name, ".metadata.json.gz") || strings.HasSuffix(name, ".gz.metadata.json")
}

// DefaultMetadataBytes is what the process keeps of immutable metadata.
const DefaultMetadataBytes = 64 << 20

// metadata is the process's cache of immutable metadata files.
var metadata = newLRU(DefaultMetadataBytes)

// lru keeps files by name up to a budget, dropping the least recently
// read first.
type lru struct {
	mu    sync.Mutex
	most  int64
	size  int64
	order *list.List // of *lruEntry, most recent first
	byKey map[string]*list.Element
}

type lruEntry struct {
	name string
	data []byte
}

func newLRU(most int64) *lru {
	return &lru{most: most, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *lru) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[name]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry).data, true
}

func (c *lru) put(name string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[name]; ok || int64(len(data)) > c.most {
		return
	}
	c.byKey[name] = c.order.PushFront(&lruEntry{name: name, data: data})
	c.size += int64(len(data))
	for c.size > c.most {
		last := c.order.Back()
		e := last.Value.(*lruEntry)
		c.order.Remove(last)
		delete(c.byKey, e.name)
		c.size -= int64(len(e.data))
	}
}

// WrapTable returns tbl reading and writing its files through this
// package (a catalog's table; commits still go to cat).
func WrapTable(tbl *table.Table, cat table.CatalogIO, o Options) *table.Table {
	cache := NewCache(DefaultCacheBytes)
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (icebergio.IO, error) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(ctx, fs, o, cache), nil
	}, cat)
}
