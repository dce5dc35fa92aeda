package s3requests

import (
	"net/http/httptest"
	"testing"
)

// TestClassify_NamesEachOperationByItsRESTShape follows the S3 API
// reference's request syntax for each operation (path-style).
func TestClassify_NamesEachOperationByItsRESTShape(t *testing.T) {
	for _, c := range []struct {
		method, target, copySource, op, class string
	}{
		{"GET", "/b/wh/t/data/a.parquet", "", GetObject, ClassGet},
		{"HEAD", "/b/wh/t/data/a.parquet", "", HeadObject, ClassGet},
		{"GET", "/b?list-type=2&prefix=wh/", "", ListObjects, ClassPut},
		{"GET", "/b/", "", ListObjects, ClassPut},
		{"PUT", "/b/wh/t/data/a.parquet", "", PutObject, ClassPut},
		{"PUT", "/b/wh/t/data/b.parquet", "/b/wh/t/data/a.parquet", CopyObject, ClassPut},
		{"POST", "/b/wh/t/data/a.parquet?uploads", "", CreateMultipartUpload, ClassPut},
		{"PUT", "/b/wh/t/data/a.parquet?partNumber=2&uploadId=u1", "", UploadPart, ClassPut},
		{"POST", "/b/wh/t/data/a.parquet?uploadId=u1", "", CompleteMultipartUpload, ClassPut},
		{"DELETE", "/b/wh/t/data/a.parquet?uploadId=u1", "", AbortMultipartUpload, ClassFree},
		{"DELETE", "/b/wh/t/data/a.parquet", "", DeleteObject, ClassFree},
		{"POST", "/b?delete", "", DeleteObjects, ClassFree},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.copySource != "" {
			r.Header.Set("x-amz-copy-source", c.copySource)
		}
		if got := Classify(r); got != c.op || ClassOf(got) != c.class {
			t.Errorf("%s %s: %s (%s), want %s (%s)", c.method, c.target, got, ClassOf(got), c.op, c.class)
		}
	}
}

func TestCounts_SumByClassAndByObject(t *testing.T) {
	c := Counts{Ops: map[string]int64{GetObject: 5, HeadObject: 1, UploadPart: 3, PutObject: 1, DeleteObject: 4},
		Gets: map[string]int64{"/b/t/data/a": 2, "/b/t/data/b": 1, "/b/t/metadata/m.avro": 2}}
	if c.Class(ClassGet) != 6 || c.Class(ClassPut) != 4 || c.Class(ClassFree) != 4 || c.Total() != 14 {
		t.Fatalf("classes get %d put %d free %d total %d", c.Class(ClassGet), c.Class(ClassPut), c.Class(ClassFree), c.Total())
	}
	if c.GetsUnder("/data/") != 3 {
		t.Fatalf("GETs under /data/: %d, want 3", c.GetsUnder("/data/"))
	}
}
