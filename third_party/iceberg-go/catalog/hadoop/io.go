// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

package hadoop

import (
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
)

// HadoopCatalogFS represents all the interfaces that a filesystem implementation
// must satisfy to be used for a Hadoop catalog implementation.
type HadoopCatalogFS interface {
	icebergio.ListableIO
	icebergio.ReadFileIO
	icebergio.WriteFileIO
	icebergio.StatIO
	icebergio.RenameIO
	icebergio.RenameNoReplaceIO
	icebergio.RemoveAllIO
	icebergio.MkdirAllIO
}

// LocalFS can be used to implement a Hadoop catalog with a local filesystem.
var _ HadoopCatalogFS = (*icebergio.LocalFS)(nil)

// BlobFileIO can be used to implement a Hadoop catalog with a blob storage bucket.
var _ HadoopCatalogFS = (*blobfs.FileIO)(nil)
