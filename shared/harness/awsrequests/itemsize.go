package awsrequests

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ValueBytes is a value's size as DynamoDB counts it (Amazon DynamoDB
// Developer Guide, "Item sizes and formats":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// strings and binaries their length, a number about one byte per two
// significant digits plus one (at most 21), booleans and nulls one byte,
// a list or map 3 bytes plus one per element and its elements (a map's
// keys too), a set the sum of its elements.
func ValueBytes(v types.AttributeValue) int {
	num := func(s string) int {
		s = strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
		digits := len(strings.ReplaceAll(s, ".", ""))
		return min((digits+1)/2+1, 21)
	}
	switch t := v.(type) {
	case *types.AttributeValueMemberS:
		return len(t.Value)
	case *types.AttributeValueMemberN:
		return num(t.Value)
	case *types.AttributeValueMemberB:
		return len(t.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range t.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range t.Value {
			n += num(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range t.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range t.Value {
			n += 1 + ValueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range t.Value {
			n += 1 + len(k) + ValueBytes(e)
		}
		return n
	}
	return 0
}

// ItemBytes is an item's size: every attribute's name and value.
func ItemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + ValueBytes(v)
	}
	return n
}
