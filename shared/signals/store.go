package signals

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// DynamoDB is the part of the DynamoDB API the store uses.
type DynamoDB interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DefaultRetention is how long a day's counters are kept (DynamoDB TTL):
// at the default half-life a day that old weighs under 1/256.
const DefaultRetention = 60 * 24 * time.Hour

// Store keeps the counters in the jobs table (ICEKEEPER_JOBS_TABLE): one
// item per table and day, job_id "signals#<table>", item_key
// "day#<date>", purged by the table's TTL after Retention. Per column it
// holds three numbers, named "col:<column>:f" (filters), ":p" (point
// filters) and ":b" (bytes scanned); per partition field value a query
// said it read, "part:<field=value>" (queries) and "pbytes:<field=value>"
// (bytes scanned); per workload class, "cls:<class>:q" and ":b" (queries,
// bytes) and per column of the class "ccol:<class>/<column>:f", ":p",
// ":b".
type Store struct {
	DB        DynamoDB
	TableName string
	// Retention: DefaultRetention when 0.
	Retention time.Duration
}

const (
	keyPrefix   = "signals#"
	dayPrefix   = "day#"
	colPrefix   = "col:"
	partPrefix  = "part:"
	pbPrefix    = "pbytes:"
	clsPrefix   = "cls:"
	clsColPrefx = "ccol:"
)

func itemKey(table, date string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"job_id":   &types.AttributeValueMemberS{Value: keyPrefix + table},
		"item_key": &types.AttributeValueMemberS{Value: dayPrefix + date},
	}
}

// MaxColumns bounds the columns one observation adds to its day (the
// first by name): each adds six counters to the update expression (three
// for the table, three for the query's class), and DynamoDB refuses an
// expression string over 4 KB ("Expression parameters",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html);
// 32 columns and MaxPartitions partitions stay under 3 KB.
const MaxColumns = 32

// Record adds one observation to its table's day. A column filtered more
// than once in one query counts once (as a point filter if any was).
func (s Store) Record(ctx context.Context, o Observation) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.At.IsZero() {
		o.At = time.Now()
	}
	retention := s.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	point := map[string]bool{}
	var cols []string
	for _, f := range o.Filters {
		if _, ok := point[f.Column]; !ok {
			cols = append(cols, f.Column)
		}
		point[f.Column] = point[f.Column] || f.Predicate.point()
	}
	slices.Sort(cols)
	if len(cols) > MaxColumns {
		cols = cols[:MaxColumns]
	}
	// Placeholders are zero-padded (#a000, #a001, ...): none is a prefix
	// of another, which the emulator's DynamoDB mishandles.
	names := map[string]string{"#q": "queries", "#b": "bytes_scanned", "#purge": jobs.PurgeAttribute}
	values := map[string]types.AttributeValue{
		":one":   &types.AttributeValueMemberN{Value: "1"},
		":bytes": &types.AttributeValueMemberN{Value: strconv.FormatInt(o.BytesScanned, 10)},
		":purge": &types.AttributeValueMemberN{Value: strconv.FormatInt(o.At.Add(retention).Unix(), 10)},
	}
	adds := []string{"#q :one", "#b :bytes"}
	parts := slices.Clone(o.Partitions)
	slices.Sort(parts)
	parts = slices.Compact(parts)
	if len(parts) > MaxPartitions {
		parts = parts[:MaxPartitions]
	}
	for i, p := range parts {
		ph := fmt.Sprintf("#p%03d", i)
		pb := fmt.Sprintf("#r%03d", i)
		names[ph], names[pb] = partPrefix+p, pbPrefix+p
		adds = append(adds, ph+" :one", pb+" :bytes")
	}
	class := workload.Of(o.Class)
	names["#cq"], names["#cb"] = clsPrefix+class+":q", clsPrefix+class+":b"
	adds = append(adds, "#cq :one", "#cb :bytes")
	for i, c := range cols {
		f, p, b := fmt.Sprintf("#a%03d", 3*i), fmt.Sprintf("#a%03d", 3*i+1), fmt.Sprintf("#a%03d", 3*i+2)
		names[f], names[p], names[b] = colPrefix+c+":f", colPrefix+c+":p", colPrefix+c+":b"
		pv := ":one"
		if !point[c] {
			// Only a value the expression uses: DynamoDB refuses the
			// update otherwise ("Value provided in
			// ExpressionAttributeValues unused in expressions"; kumo
			// does not check, moto does).
			pv = ":zero"
			values[pv] = &types.AttributeValueMemberN{Value: "0"}
		}
		adds = append(adds, f+" :one", p+" "+pv, b+" :bytes")
		cf, cp, cb := fmt.Sprintf("#k%03d", 3*i), fmt.Sprintf("#k%03d", 3*i+1), fmt.Sprintf("#k%03d", 3*i+2)
		pre := clsColPrefx + class + "/" + c
		names[cf], names[cp], names[cb] = pre+":f", pre+":p", pre+":b"
		adds = append(adds, cf+" :one", cp+" "+pv, cb+" :bytes")
	}
	_, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.TableName),
		Key:                       itemKey(o.Table, DateOf(o.At)),
		UpdateExpression:          aws.String("SET #purge = if_not_exists(#purge, :purge) ADD " + strings.Join(adds, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return fmt.Errorf("signals: record a query on %s: %w", o.Table, err)
	}
	return nil
}

// Days reads a table's days from since to now, oldest first.
func (s Store) Days(ctx context.Context, table string, since, now time.Time) ([]Day, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.TableName),
		KeyConditionExpression: aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames: map[string]string{
			"#pk": "job_id", "#sk": "item_key",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: keyPrefix + table},
			":from": &types.AttributeValueMemberS{Value: dayPrefix + DateOf(since)},
			":to":   &types.AttributeValueMemberS{Value: dayPrefix + DateOf(now)},
		},
	}
	var days []Day
	for {
		out, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("signals: read %s's days: %w", table, err)
		}
		for _, it := range out.Items {
			days = append(days, dayOf(it))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return days, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func dayOf(it map[string]types.AttributeValue) Day {
	d := Day{Columns: map[string]ColumnDay{}}
	if v, ok := it["item_key"].(*types.AttributeValueMemberS); ok {
		d.Date = strings.TrimPrefix(v.Value, dayPrefix)
	}
	num := func(v types.AttributeValue) int64 {
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	d.Queries, d.BytesScanned = num(it["queries"]), num(it["bytes_scanned"])
	for name, v := range it {
		if p, ok := strings.CutPrefix(name, pbPrefix); ok {
			if d.PartitionBytes == nil {
				d.PartitionBytes = map[string]int64{}
			}
			d.PartitionBytes[p] = num(v)
			continue
		}
		if rest, ok := strings.CutPrefix(name, clsPrefix); ok && len(rest) > 2 && rest[len(rest)-2] == ':' {
			cd := classDay(&d, rest[:len(rest)-2])
			switch rest[len(rest)-1] {
			case 'q':
				cd.Queries = num(v)
			case 'b':
				cd.BytesScanned = num(v)
			}
			d.Classes[rest[:len(rest)-2]] = *cd
			continue
		}
		if rest, ok := strings.CutPrefix(name, clsColPrefx); ok && len(rest) > 2 && rest[len(rest)-2] == ':' {
			class, col, ok := strings.Cut(rest[:len(rest)-2], "/")
			if !ok {
				continue
			}
			cd := classDay(&d, class)
			c := cd.Columns[col]
			setColumn(&c, rest[len(rest)-1], num(v))
			cd.Columns[col] = c
			d.Classes[class] = *cd
			continue
		}
		if p, ok := strings.CutPrefix(name, partPrefix); ok {
			if d.Partitions == nil {
				d.Partitions = map[string]int64{}
			}
			d.Partitions[p] = num(v)
			continue
		}
		if !strings.HasPrefix(name, colPrefix) || len(name) < len(colPrefix)+3 || name[len(name)-2] != ':' {
			continue
		}
		col := name[len(colPrefix) : len(name)-2]
		c := d.Columns[col]
		setColumn(&c, name[len(name)-1], num(v))
		d.Columns[col] = c
	}
	return d
}

func setColumn(c *ColumnDay, which byte, n int64) {
	switch which {
	case 'f':
		c.Filters = n
	case 'p':
		c.Point = n
	case 'b':
		c.BytesScanned = n
	}
}

// classDay is d's class, made when new.
func classDay(d *Day, class string) *ClassDay {
	if d.Classes == nil {
		d.Classes = map[string]ClassDay{}
	}
	cd := d.Classes[class]
	if cd.Columns == nil {
		cd.Columns = map[string]ColumnDay{}
	}
	return &cd
}
