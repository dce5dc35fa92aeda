package tests

// The safety harness's tables on S3 (see safety_test.go): every seed but
// those kept before them (safetyFixedSeedsBefore, ...Later, ...Undo) adds
// a table located at s3://bucket/wh/demo/s3 on the emulator's S3 and, as
// the seed says, a table nested in its data/ folder whose location is
// spelled s3a:// or s3n:// (a table a Hadoop S3A writer created: its
// metadata, manifests and files are all named so). Another tool writes to
// the S3 table through Hadoop's S3A or S3N filesystem (opS3AWriter): its
// data and delete files are recorded as s3a://bucket/... or
// s3n://bucket/..., the same objects as s3://bucket/... names. Iceberg
// Java's DeleteOrphanFiles treats s3, s3a and s3n as one scheme
// (DeleteOrphanFilesSparkAction's EQUAL_SCHEMES_DEFAULT) and refuses a
// listed file whose path a reference has under another scheme or
// authority (its PrefixMismatchMode.ERROR); a listing names every object
// s3://, so an orphan cleanup that compared names as strings would delete
// every file the S3A writer recorded.
//
// The model names an S3 object by its bucket and key, whatever the
// scheme of the s3 family it is spelled with (s3Object: its own parser,
// not package storagepath), and reads S3 through the emulator's own
// client, not icekeeper's file IO.
//
// Time passing on S3: an object's age cannot be set, so the table IO of
// every writer and of icekeeper reaches the emulator through s3Clock, a
// proxy that reports each object aged as many times four days as time
// passed since it was written (LastModified in listings, Last-Modified in
// HEAD and GET responses), as the local files' modification times are
// moved back.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	iofs "io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// s3Schemes are the schemes of the s3 family: one object store, whichever
// a writer spells (Hadoop's S3A and older S3N filesystems, AWS's s3).
var s3Schemes = []string{"s3", "s3a", "s3n"}

// s3Object splits an s3, s3a or s3n URI into its bucket and key (the key
// as written: S3 keys are not paths, a//b and a/b are two objects).
func s3Object(uri string) (bucket, key string, ok bool) {
	scheme, rest, found := strings.Cut(uri, "://")
	if !found {
		return "", "", false
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "s3n":
	default:
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != ""
}

// fileID is the identity of the file a location names: s3://bucket/key
// for every spelling of an S3 object, file://path for a local file.
func fileID(p string) string {
	if bucket, key, ok := s3Object(p); ok {
		return "s3://" + bucket + "/" + key
	}
	return "file://" + localPath(p)
}

// respell is uri with its scheme replaced by scheme.
func respell(uri, scheme string) string {
	_, rest, _ := strings.Cut(uri, "://")
	return scheme + "://" + rest
}

// s3Clock is a proxy in front of the emulator's S3 that moves objects'
// modification times back, as time passing does to local files (opAge).
type s3Clock struct {
	srv *httptest.Server
	mu  sync.Mutex
	// aged are the objects aged ("bucket/key"): the modification time
	// the emulator reports and how far back to move it (an object written
	// again under the same key has another time and is young).
	aged map[string]agedObject
}

type agedObject struct {
	modified time.Time
	by       time.Duration
}

// startS3Clock starts the proxy in front of the emulator; it stops with t.
func startS3Clock(t *testing.T) *s3Clock {
	c := &s3Clock{aged: map[string]agedObject{}}
	target, err := url.Parse(cloud.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	direct := p.Director
	p.Director = func(r *http.Request) {
		direct(r)
		r.Header.Del("Accept-Encoding") // bodies are rewritten as plain text
	}
	p.ModifyResponse = c.rewrite
	c.srv = httptest.NewServer(p)
	t.Cleanup(c.srv.Close)
	return c
}

// ageAll ages every object of bucket by d; it returns how many.
func (c *s3Clock) ageAll(ctx context.Context, bucket string, d time.Duration) (int, error) {
	objs, err := listObjects(ctx, bucket)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		id := bucket + "/" + aws.ToString(o.Key)
		a := c.aged[id]
		if !a.modified.Equal(aws.ToTime(o.LastModified)) {
			a = agedObject{modified: aws.ToTime(o.LastModified)}
		}
		a.by += d
		c.aged[id] = a
	}
	return len(objs), nil
}

// agedOnce says whether time passed since object id was written (once
// it has, the object is older than the orphan safety age).
func (c *s3Clock) agedOnce(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aged[id].by > 0
}

// shift is how far back object id's modification time modified moves
// (same: compares a time the emulator reported at that precision).
func (c *s3Clock) shift(id string, modified time.Time, same func(a, b time.Time) bool) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.aged[id]; ok && same(a.modified, modified) {
		return a.by
	}
	return 0
}

var (
	listedObject = regexp.MustCompile(`(?s)<Contents>.*?</Contents>`)
	listedKey    = regexp.MustCompile(`(?s)<Key>(.*?)</Key>`)
	listedTime   = regexp.MustCompile(`<LastModified>([^<]*)</LastModified>`)
)

// s3ListTime is the emulator's LastModified in listings (kumo's, and S3's).
const s3ListTime = "2006-01-02T15:04:05.000Z"

// rewrite moves aged objects' times back in a response: the LastModified
// of each object a listing (ListObjects, V1 or V2) returns, and a HEAD's or
// GET's Last-Modified header.
func (c *s3Clock) rewrite(resp *http.Response) error {
	req := resp.Request
	bucket, key, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	if lm := resp.Header.Get("Last-Modified"); lm != "" && key != "" {
		if t, err := http.ParseTime(lm); err == nil {
			seconds := func(a, b time.Time) bool { return a.Truncate(time.Second).Equal(b) }
			if d := c.shift(bucket+"/"+key, t, seconds); d > 0 {
				resp.Header.Set("Last-Modified", t.Add(-d).UTC().Format(http.TimeFormat))
			}
		}
	}
	if req.Method != http.MethodGet || key != "" || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	escaped := req.URL.Query().Get("encoding-type") == "url"
	body = listedObject.ReplaceAllFunc(body, func(obj []byte) []byte {
		k := listedKey.FindSubmatch(obj)
		m := listedTime.FindSubmatch(obj)
		if k == nil || m == nil {
			return obj
		}
		name := html.UnescapeString(string(k[1]))
		if escaped {
			if u, err := url.QueryUnescape(name); err == nil {
				name = u
			}
		}
		t, err := time.Parse(s3ListTime, string(m[1]))
		if err != nil {
			return obj
		}
		d := c.shift(bucket+"/"+name, t, time.Time.Equal)
		if d == 0 {
			return obj
		}
		return listedTime.ReplaceAll(obj, []byte("<LastModified>"+t.Add(-d).UTC().Format(s3ListTime)+"</LastModified>"))
	})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// listObjects lists every object of bucket, straight from the emulator.
func listObjects(ctx context.Context, bucket string) ([]s3types.Object, error) {
	var out []s3types.Object
	p := s3.NewListObjectsV2Paginator(cloud.Clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s: %w", bucket, err)
		}
		out = append(out, page.Contents...)
	}
	return out, nil
}

// safetyS3 is a run's S3: its bucket and the proxy its tables' IO goes
// through.
type safetyS3 struct {
	bucket string
	clock  *s3Clock
}

// newSafetyS3 creates the run's bucket and its proxy.
func newSafetyS3(t *testing.T, seed uint64) *safetyS3 {
	bucket := fmt.Sprintf("safety-%d-%d", seed, seq.Add(1))
	if _, err := cloud.Clients.S3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return &safetyS3{bucket: bucket, clock: startS3Clock(t)}
}

// catalogProperties are the S3 file IO's properties (the tables' IO of
// every writer and of icekeeper reach the emulator through the proxy).
func (s *safetyS3) catalogProperties() map[string]string {
	return map[string]string{
		"s3.endpoint": s.clock.srv.URL, "s3.region": "us-east-1",
		"s3.access-key-id": "test", "s3.secret-access-key": "test",
		"s3.force-virtual-addressing": "false",
	}
}

// createS3Tables creates the S3 tables: s3 at s3://bucket/wh/demo/s3
// (one time in two with its write.data.path spelled s3a:// or s3n://, as
// an engine configured with Hadoop's S3A sets it: every data and delete
// file anyone writes then has that spelling, icekeeper's rewrites too),
// and one time in two s3_nested, inside its data/ folder and located with
// an s3a:// or s3n:// spelling.
func (r *safetyRun) createS3Tables() {
	loc := "s3://" + r.s3.bucket + "/wh/demo/s3"
	r.createTable("s3", "s3", loc)
	if r.rng.IntN(2) == 0 {
		st := r.tables[len(r.tables)-1]
		tbl := r.load(st)
		p := tbl.Properties()[table.WriteDataPathKey]
		if p == "" {
			p = loc + "/data"
		}
		p = respell(p, []string{"s3a", "s3n"}[r.rng.IntN(2)])
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{table.WriteDataPathKey: p}); err != nil {
			r.t.Fatal(err)
		}
		if _, err := txn.Commit(r.e.ctx); err != nil {
			r.t.Fatal(err)
		}
		r.note("set write.data.path of %s to %s (an engine configured with Hadoop's S3A)", st.name, p)
	}
	if r.rng.IntN(2) == 0 {
		r.createTable("s3_nested", "nested in s3", respell(loc, []string{"s3a", "s3n"}[r.rng.IntN(2)])+"/data/nested")
	}
}

// onS3 says whether a table is located on S3 (any spelling).
func (st *sTable) onS3(r *safetyRun) bool {
	_, _, ok := s3Object(st.location(r))
	return ok
}

// fileExists says whether the file a location names is on storage.
func (r *safetyRun) fileExists(p string) (bool, error) {
	if bucket, key, ok := s3Object(p); ok {
		_, err := cloud.Clients.S3.HeadObject(r.e.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		var nf *s3types.NotFound
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &nf):
			return false, nil
		}
		return false, err
	}
	_, err := statLocal(p)
	return err == nil, nil
}

// readFile reads the file a location names (nil when it is missing).
func (r *safetyRun) readFile(p string) ([]byte, error) {
	if bucket, key, ok := s3Object(p); ok {
		out, err := cloud.Clients.S3.GetObject(r.e.ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			var nk *s3types.NoSuchKey
			if errors.As(err, &nk) {
				return nil, nil
			}
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	return readLocal(p)
}

// writeFile writes a file at a location.
func (r *safetyRun) writeFile(p string, data []byte) error {
	if bucket, key, ok := s3Object(p); ok {
		_, err := cloud.Clients.S3.PutObject(r.e.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
		return err
	}
	return writeLocal(p, data)
}

// respelled says whether a table, as the catalog has it now, references
// an object under an s3a:// or s3n:// name (its metadata file, or a file a
// snapshot of its current metadata reads), and whether one of those lies
// under its location and is old enough to be an orphan: a job that ended
// then ran over such names, and an orphan cleanup listed that one as an
// old file it had to match with its reference.
func (m *safetyModel) respelled(st *sTable) (named, old bool) {
	if st == nil || m.r.s3 == nil {
		return false, false
	}
	tbl := m.r.load(st)
	bucket, key, _ := s3Object(tbl.Location())
	under := strings.TrimSuffix(key, "/") + "/"
	see := func(p string) {
		scheme, _, _ := strings.Cut(p, "://")
		if scheme != "s3a" && scheme != "s3n" {
			return
		}
		named = true
		if b, k, _ := s3Object(p); b == bucket && strings.HasPrefix(k, under) && m.r.s3.clock.agedOnce(b+"/"+k) {
			old = true
		}
	}
	see(tbl.MetadataLocation())
	for _, s := range tbl.Metadata().Snapshots() {
		m.snapshotFiles(s, "", func(p, _ string) { see(p) })
	}
	return named, old
}

// statLocal, readLocal and writeLocal are fileExists, readFile and
// writeFile on a local file (a file: URI or a path).
func statLocal(p string) (iofs.FileInfo, error) { return os.Stat(localPath(p)) }

func readLocal(p string) ([]byte, error) {
	data, err := os.ReadFile(localPath(p))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func writeLocal(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(localPath(p)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(localPath(p), data, 0o644)
}

// s3Keys lists the keys of the run's bucket ("s3://bucket/key").
func (r *safetyRun) s3Keys() map[string]bool {
	out := map[string]bool{}
	if r.s3 == nil {
		return out
	}
	objs, err := listObjects(r.e.ctx, r.s3.bucket)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, o := range objs {
		out["s3://"+r.s3.bucket+"/"+aws.ToString(o.Key)] = true
	}
	return out
}

// s3Ops are the changes drawn by the seeds with S3 tables (not by those
// kept before them): another engine writing through Hadoop's S3A or S3N
// filesystem; and time passing more often, so that orphan cleanups meet
// old files (those it wrote among them) more often.
var s3Ops = []otherOp{
	{"s3a or s3n writer", 8, (*safetyRun).opS3AWriter},
	{"time passes", 6, func(r *safetyRun, _ *sTable) (string, error) { return r.opAge() }},
}

// opS3AWriter is another engine writing to a table on S3 through Hadoop's
// S3A (or older S3N) filesystem, as Spark with s3a:// paths does: it names
// the files it writes s3a://bucket/key (s3n://), the same objects as the
// table's s3://bucket/key. Its append, position delete, equality delete or
// overwrite of main writes under write.data.path respelled with its scheme
// (set, and put back, in the same transaction: one commit), so that the
// manifests record its data files and its Parquet delete files under that
// spelling (deletion vectors go to the location's data/ as iceberg-go
// writes them, and a position delete names the data files it deletes from
// as they are recorded). One time in two a task of its died after writing
// a file, which stays behind, an orphan.
func (r *safetyRun) opS3AWriter(st *sTable) (string, error) {
	tbl := r.load(st)
	bucket, key, ok := s3Object(tbl.Location())
	if !ok {
		return "", errSkip
	}
	scheme := []string{"s3a", "s3n"}[r.rng.IntN(2)]
	props := tbl.Properties()
	prev, had := props[table.WriteDataPathKey]
	dataPath := scheme + "://" + bucket + "/" + strings.TrimSuffix(key, "/") + "/data"
	if had {
		if _, _, s3 := s3Object(prev); s3 {
			dataPath = respell(prev, scheme)
		}
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.WriteDataPathKey: dataPath}); err != nil {
		return "", err
	}
	var what string
	var added []int64
	switch kind := r.rng.IntN(10); {
	case kind < 5:
		rdr, ids, err := r.newRows(st, 3+r.rng.IntN(12))
		if err != nil {
			return "", err
		}
		defer rdr.Release()
		if err := txn.Append(r.e.ctx, rdr, nil); err != nil {
			return "", err
		}
		added, what = ids, fmt.Sprintf("appends ids %d..%d", ids[0], ids[len(ids)-1])
	case kind < 7:
		ids := r.pickIDs(st, 1+r.rng.IntN(4))
		if len(ids) == 0 {
			return "", errSkip
		}
		if err := txn.Delete(r.e.ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
			return "", err
		}
		what = fmt.Sprintf("deletes ids %v", ids)
	case kind < 9:
		ids := r.pickIDs(st, 1+r.rng.IntN(4))
		if len(ids) == 0 {
			return "", errSkip
		}
		var regionOf func(int64) string
		if st.parts > 0 {
			regionOf = func(id int64) string { return st.region[id] }
		}
		if err := sampletable.StageEqualityDelete(r.e.ctx, txn, ids, regionOf); err != nil {
			return "", err
		}
		what = fmt.Sprintf("equality-deletes ids %v", ids)
	default:
		ids := r.pickIDs(st, 1+r.rng.IntN(3))
		if len(ids) == 0 {
			return "", errSkip
		}
		rdr, news, err := r.newRows(st, 2+r.rng.IntN(4))
		if err != nil {
			return "", err
		}
		defer rdr.Release()
		if err := txn.Delete(r.e.ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
			return "", err
		}
		if err := txn.Append(r.e.ctx, rdr, nil); err != nil {
			return "", err
		}
		added, what = news, fmt.Sprintf("overwrites ids %v with ids %d..%d", ids, news[0], news[len(news)-1])
	}
	var err error
	if had {
		err = txn.SetProperties(iceberg.Properties{table.WriteDataPathKey: prev})
	} else {
		err = txn.RemoveProperties([]string{table.WriteDataPathKey})
	}
	if err != nil {
		return "", err
	}
	if _, err := txn.Commit(r.e.ctx); err != nil {
		return "", err
	}
	st.ids = append(st.ids, added...)
	left := ""
	if r.rng.IntN(2) == 0 {
		// One of its tasks died after writing its file: an orphan named
		// for the writer's scheme, which nothing references.
		r.plantSeq++
		p := fmt.Sprintf("%s/00000-%d-%s-attempt-lost.parquet", dataPath, r.plantSeq, scheme)
		if err := r.writeFile(p, []byte("PAR1 a lost task's file PAR1")); err != nil {
			return "", err
		}
		left = ", and leaves " + p + " behind"
	}
	return fmt.Sprintf("an %s writer %s on main of %s, its files named %s/...%s", scheme, what, st.name, dataPath, left), nil
}
