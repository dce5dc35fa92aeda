package fileio_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
)

var runs atomic.Int64

// s3Env is a bucket in the emulator behind a request counter.
func s3Env(t *testing.T) (*s3requests.Proxy, map[string]string, string) {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	// kumo's state is process-wide, and so is this package's metadata
	// cache: every run of a test (go test -count=N) gets a bucket of its own.
	// S3's bucket names are 3 to 63 characters (moto, like S3, refuses
	// longer ones): a long test name is cut and keeps a hash of itself.
	bucket := fmt.Sprintf("fileio-%d-%s", runs.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-")))
	if len(bucket) > 63 {
		sum := sha256.Sum256([]byte(bucket))
		bucket = strings.TrimRight(bucket[:54], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	if _, err := cloud.Clients.S3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	p, err := s3requests.Start(cloud.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	props := map[string]string{
		"s3.endpoint": p.URL, "s3.region": "us-east-1",
		"s3.access-key-id": "test", "s3.secret-access-key": "test",
		"s3.force-virtual-addressing": "false",
	}
	return p, props, "s3://" + bucket
}

func load(t *testing.T, props map[string]string, root string, o fileio.Options) icebergio.IO {
	t.Helper()
	fs, err := fileio.LoadFunc(props, root+"/x", o)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func write(t *testing.T, fs icebergio.IO, path string, data []byte) {
	t.Helper()
	w, err := fs.(icebergio.WriteFileIO).Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readLikeParquet reads a file as a Parquet reader does: the footer's
// length, the footer, then column chunks, each with ReadAt.
func readLikeParquet(t *testing.T, fs icebergio.IO, path string, want []byte) {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() != int64(len(want)) {
		t.Fatalf("stat: size %d, %v; want %d", st.Size(), err, len(want))
	}
	for _, r := range [][2]int{{len(want) - 8, 8}, {len(want) - 4096, 4088}, {4, 100_000}, {300_000, 200_000}} {
		got := make([]byte, r[1])
		if _, err := f.ReadAt(got, int64(r[0])); err != nil {
			t.Fatalf("ReadAt(%d, %d): %v", r[0], r[1], err)
		}
		if !bytes.Equal(got, want[r[0]:r[0]+r[1]]) {
			t.Fatalf("ReadAt(%d, %d) read other bytes", r[0], r[1])
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("read all: %d bytes, %v", len(all), err)
	}
}

func payload(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestOpen_ASmallFileIsOneGetWhateverTheReaderAsks: four ranged reads, a
// seek and a full read of a 1 MiB file cost one GET; iceberg-go's own IO
// spends one GET per read on top of the one that opened it.
func TestOpen_ASmallFileIsOneGetWhateverTheReaderAsks(t *testing.T) {
	p, props, root := s3Env(t)
	data := payload(1 << 20)
	ours := load(t, props, root, fileio.Options{})
	write(t, ours, root+"/data/small.parquet", data)

	p.Reset()
	readLikeParquet(t, ours, root+"/data/small.parquet", data)
	if got := p.Counts().Ops[s3requests.GetObject]; got != 1 {
		t.Fatalf("reading a 1 MiB file took %d GETs, want 1", got)
	}

	p.Reset()
	plain, err := icebergio.LoadFS(context.Background(), props, root+"/x")
	if err != nil {
		t.Fatal(err)
	}
	readLikeParquet(t, plain, root+"/data/small.parquet", data)
	if got := p.Counts().Ops[s3requests.GetObject]; got < 5 {
		t.Fatalf("iceberg-go's IO read it with %d GETs; the test expects one per ReadAt plus the open", got)
	}
}

// TestOpen_ALargeFileIsNotHeldInMemory: above WholeReadBytes a file is
// read by ranges, as iceberg-go does.
func TestOpen_ALargeFileIsNotHeldInMemory(t *testing.T) {
	p, props, root := s3Env(t)
	data := payload(1 << 20)
	fs := load(t, props, root, fileio.Options{WholeReadBytes: 512 << 10})
	write(t, fs, root+"/data/large.parquet", data)
	p.Reset()
	readLikeParquet(t, fs, root+"/data/large.parquet", data)
	if got := p.Counts().Ops[s3requests.GetObject]; got < 5 {
		t.Fatalf("a file over the limit was read with %d GETs; want ranged reads", got)
	}
}

// TestCreate_UploadsInLargeParts: a file smaller than a part is one
// PutObject; a 140 MiB file is three 64 MiB parts (at most one PUT per
// 64 MiB, plus the upload's create and complete).
func TestCreate_UploadsInLargeParts(t *testing.T) {
	p, props, root := s3Env(t)
	fs := load(t, props, root, fileio.Options{})
	write(t, fs, root+"/data/one.parquet", payload(2<<20))
	if c := p.Counts(); c.Ops[s3requests.PutObject] != 1 || c.Ops[s3requests.UploadPart] != 0 {
		t.Fatalf("a 2 MiB file: %v, want one PutObject", c.Ops)
	}
	p.Reset()
	big := payload(140 << 20)
	write(t, fs, root+"/data/big.parquet", big)
	c := p.Counts()
	if c.Ops[s3requests.UploadPart] != 3 || c.Ops[s3requests.CreateMultipartUpload] != 1 || c.Ops[s3requests.CompleteMultipartUpload] != 1 {
		t.Fatalf("a 140 MiB file: %v, want 3 parts", c.Ops)
	}
	if c.BytesUp != int64(len(big)) {
		t.Fatalf("uploaded %d bytes, want %d", c.BytesUp, len(big))
	}
	p.Reset()
	readLikeParquet(t, fs, root+"/data/big.parquet", big)
}

// TestWrap_LeavesLocalFilesAlone: a local IO is returned as it is.
func TestWrap_LeavesLocalFilesAlone(t *testing.T) {
	local := icebergio.LocalFS{}
	if got := fileio.Wrap(context.Background(), local, fileio.Options{}); got != icebergio.IO(local) {
		t.Fatalf("wrapped a local IO: %T", got)
	}
}

// TestRetain_AKeptFileIsReadOnceAcrossTheTablesIOs: the IOs one LoadFunc
// loads share a cache; a file asked to be kept is read with one GET
// however often it is opened, by any of them; a file not asked for, or
// past the cache's budget, is read again.
func TestRetain_AKeptFileIsReadOnceAcrossTheTablesIOs(t *testing.T) {
	p, props, root := s3Env(t)
	loadIO := fileio.LoadFunc(props, root+"/x", fileio.Options{})
	first, err := loadIO(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kept, other := root+"/data/deletes.parquet", root+"/data/data.parquet"
	data := payload(1 << 20)
	write(t, first, kept, data)
	write(t, first, other, data)
	fileio.Retain(first, kept)
	p.Reset()
	second, err := loadIO(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range []icebergio.IO{first, second, first} {
		readLikeParquet(t, fs, kept, data)
		readLikeParquet(t, fs, other, data)
	}
	if got := p.Counts().Ops[s3requests.GetObject]; got != 1+3 {
		t.Fatalf("%d GETs, want 1 for the kept file and 3 for the other", got)
	}
}

// TestImmutableMetadata_IsReadOncePerProcess: a manifest, a manifest list
// and a metadata file (Iceberg never rewrites one in place) are read once
// by any IO of the process, by Open or ReadFile; a Hadoop
// version-hint.text, which is rewritten, and data files are read each time.
func TestImmutableMetadata_IsReadOncePerProcess(t *testing.T) {
	p, props, root := s3Env(t)
	data := payload(1 << 20)
	names := []string{
		root + "/t/metadata/3f6c1b7e-m0.avro", root + "/t/metadata/snap-1-3f6c1b7e.avro",
		root + "/t/metadata/00001-3f6c1b7e.metadata.json", root + "/t/metadata/version-hint.text", root + "/t/data/a.parquet",
	}
	for _, n := range names {
		write(t, load(t, props, root, fileio.Options{}), n, data)
	}
	p.Reset()
	for i := 0; i < 3; i++ {
		fs := load(t, props, root, fileio.Options{})
		for _, n := range names {
			readLikeParquet(t, fs, n, data)
			b, err := fs.(icebergio.ReadFileIO).ReadFile(n)
			if err != nil || !bytes.Equal(b, data) {
				t.Fatalf("ReadFile %s: %d bytes, %v", n, len(b), err)
			}
			b[0] ^= 0xff // the caller may change what ReadFile returns
		}
	}
	c := p.Counts()
	for _, n := range names {
		key := strings.TrimPrefix(n, "s3:/")
		want := int64(1)
		if strings.HasSuffix(n, "version-hint.text") || strings.HasSuffix(n, ".parquet") {
			want = 6
		}
		if got := c.Gets[key]; got != want {
			t.Errorf("%s: %d GETs, want %d", n, got, want)
		}
	}
}
