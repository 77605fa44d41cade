package command

// metaGeo returns the metadata of Redis 7.0's "geo" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaGeo() []*Spec {
	return []*Spec{
		{Name: "geoadd", Arity: -5, Flags: FlagWrite | FlagDenyOOM, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRW|KeyUpdate, 1, 0, 1, 0)},
			Doc:      NewDoc("Add one or more geospatial items in the geospatial index represented using a sorted set", "3.2.0", "geo", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")},
		{Name: "geodist", Arity: -4, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Returns the distance between two members of a geospatial index", "3.2.0", "geo", "O(log(N))")},
		{Name: "geohash", Arity: -2, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Returns members of a geospatial index as standard geohash strings", "3.2.0", "geo", "O(log(N)) for each member requested, where N is the number of elements in the sorted set.")},
		{Name: "geopos", Arity: -2, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Returns longitude and latitude of members of a geospatial index", "3.2.0", "geo", "O(N) where N is the number of members requested.")},
		{Name: "georadius", Arity: -6, Flags: FlagWrite | FlagDenyOOM, ACL: CatGeo, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0),
				ksKeywordRange(KeyOW|KeyUpdate, "STORE", 6, 0, 1, 0),
				ksKeywordRange(KeyOW|KeyUpdate, "STOREDIST", 6, 0, 1, 0),
			},
			Doc: deprecatedDoc(NewDoc("Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", "3.2.0", "geo", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
				"6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument")},
		{Name: "georadius_ro", Arity: -6, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc: deprecatedDoc(NewDoc("A read-only variant for GEORADIUS", "3.2.10", "geo", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
				"6.2.0", "`GEOSEARCH` with the `BYRADIUS` argument")},
		{Name: "georadiusbymember", Arity: -5, Flags: FlagWrite | FlagDenyOOM, ACL: CatGeo, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0),
				ksKeywordRange(KeyOW|KeyUpdate, "STORE", 5, 0, 1, 0),
				ksKeywordRange(KeyOW|KeyUpdate, "STOREDIST", 5, 0, 1, 0),
			},
			Doc: deprecatedDoc(NewDoc("Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", "3.2.0", "geo", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
				"6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments")},
		{Name: "georadiusbymember_ro", Arity: -5, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc: deprecatedDoc(NewDoc("A read-only variant for GEORADIUSBYMEMBER", "3.2.10", "geo", "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."),
				"6.2.0", "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments")},
		{Name: "geosearch", Arity: -7, Flags: FlagReadonly, ACL: CatGeo,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", "6.2.0", "geo", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape")},
		{Name: "geosearchstore", Arity: -8, Flags: FlagWrite | FlagDenyOOM, ACL: CatGeo,
			KeySpecs: []KeySpec{
				ksIndexRange(KeyOW|KeyUpdate, 1, 0, 1, 0),
				ksIndexRange(KeyRO|KeyAccess, 2, 0, 1, 0),
			},
			Doc: NewDoc("Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", "6.2.0", "geo", "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape")},
	}
}
