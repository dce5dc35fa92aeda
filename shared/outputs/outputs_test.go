package outputs

import "testing"

// TestInTableBucket_RecognisesS3TablesLocations: S3 Tables gives each
// table a location of the form s3://<id>--table-s3 (Amazon S3 User Guide,
// "Tables in S3 table buckets"); nothing else is a table bucket.
func TestInTableBucket_RecognisesS3TablesLocations(t *testing.T) {
	for loc, want := range map[string]bool{
		"s3://63a8e430-6e0b-46f5-k833abtwr6s8tmtsycedn8s4yc3xhuse1b--table-s3":        true,
		"s3://63a8e430-6e0b-46f5-k833abtwr6s8tmtsycedn8s4yc3xhuse1b--table-s3/data/x": true,
		"s3://lake/warehouse/db/t":          false,
		"s3://lake/x--table-s3/db/t":        false,
		"file:///tmp/x--table-s3":           false,
		"s3a://abc--table-s3":               false,
		"s3://abc--table-s3-not/metadata/x": false,
	} {
		if got := InTableBucket(loc); got != want {
			t.Errorf("InTableBucket(%q) = %t, want %t", loc, got, want)
		}
	}
}
