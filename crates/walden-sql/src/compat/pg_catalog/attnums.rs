//! The column numbers (`attnum`) of PostgreSQL 15's catalog relations,
//! by column name, for the catalogs Walden answers: RowDescription marks a
//! catalog column with its relation's OID and this number, as PostgreSQL
//! does (Walden's catalogs leave some of PostgreSQL's columns out, so a
//! column's place in Walden's list is not its number).

/// Each catalog relation's OID and its columns in `attnum` order.
const COLUMNS: &[(i64, &str)] = &[
    (826, "oid defaclrole defaclnamespace defaclobjtype defaclacl"),
    (1213, "oid spcname spcowner spcacl spcoptions"),
    (1247, "oid typname typnamespace typowner typlen typbyval typtype typcategory typispreferred typisdefined typdelim typrelid typsubscript typelem typarray typinput typoutput typreceive typsend typmodin typmodout typanalyze typalign typstorage typnotnull typbasetype typtypmod typndims typcollation typdefaultbin typdefault typacl"),
    (1249, "attrelid attname atttypid attstattarget attlen attnum attndims attcacheoff atttypmod attbyval attalign attstorage attcompression attnotnull atthasdef atthasmissing attidentity attgenerated attisdropped attislocal attinhcount attcollation attacl attoptions attfdwoptions attmissingval"),
    (1255, "oid proname pronamespace proowner prolang procost prorows provariadic prosupport prokind prosecdef proleakproof proisstrict proretset provolatile proparallel pronargs pronargdefaults prorettype proargtypes proallargtypes proargmodes proargnames proargdefaults protrftypes prosrc probin prosqlbody proconfig proacl"),
    (1259, "oid relname relnamespace reltype reloftype relowner relam relfilenode reltablespace relpages reltuples relallvisible reltoastrelid relhasindex relisshared relpersistence relkind relnatts relchecks relhasrules relhastriggers relhassubclass relrowsecurity relforcerowsecurity relispopulated relreplident relispartition relrewrite relfrozenxid relminmxid relacl reloptions relpartbound"),
    (1260, "oid rolname rolsuper rolinherit rolcreaterole rolcreatedb rolcanlogin rolreplication rolbypassrls rolconnlimit rolpassword rolvaliduntil"),
    (1261, "roleid member grantor admin_option"),
    (1262, "oid datname datdba encoding datlocprovider datistemplate datallowconn datconnlimit datfrozenxid datminmxid dattablespace datcollate datctype daticulocale datcollversion datacl"),
    (1417, "oid srvname srvowner srvfdw srvtype srvversion srvacl srvoptions"),
    (1418, "oid umuser umserver umoptions"),
    (2224, "seqrelid seqtypid seqstart seqincrement seqmax seqmin seqcache seqcycle"),
    (2328, "oid fdwname fdwowner fdwhandler fdwvalidator fdwacl fdwoptions"),
    (2600, "aggfnoid aggkind aggnumdirectargs aggtransfn aggfinalfn aggcombinefn aggserialfn aggdeserialfn aggmtransfn aggminvtransfn aggmfinalfn aggfinalextra aggmfinalextra aggfinalmodify aggmfinalmodify aggsortop aggtranstype aggtransspace aggmtranstype aggmtransspace agginitval aggminitval"),
    (2601, "oid amname amhandler amtype"),
    (2602, "oid amopfamily amoplefttype amoprighttype amopstrategy amoppurpose amopopr amopmethod amopsortfamily"),
    (2603, "oid amprocfamily amproclefttype amprocrighttype amprocnum amproc"),
    (2604, "oid adrelid adnum adbin"),
    (2605, "oid castsource casttarget castfunc castcontext castmethod"),
    (2606, "oid conname connamespace contype condeferrable condeferred convalidated conrelid contypid conindid conparentid confrelid confupdtype confdeltype confmatchtype conislocal coninhcount connoinherit conkey confkey conpfeqop conppeqop conffeqop confdelsetcols conexclop conbin"),
    (2607, "oid conname connamespace conowner conforencoding contoencoding conproc condefault"),
    (2608, "classid objid objsubid refclassid refobjid refobjsubid deptype"),
    (2609, "objoid classoid objsubid description"),
    (2610, "indexrelid indrelid indnatts indnkeyatts indisunique indnullsnotdistinct indisprimary indisexclusion indimmediate indisclustered indisvalid indcheckxmin indisready indislive indisreplident indkey indcollation indclass indoption indexprs indpred"),
    (2611, "inhrelid inhparent inhseqno inhdetachpending"),
    (2612, "oid lanname lanowner lanispl lanpltrusted lanplcallfoid laninline lanvalidator lanacl"),
    (2615, "oid nspname nspowner nspacl"),
    (2616, "oid opcmethod opcname opcnamespace opcowner opcfamily opcintype opcdefault opckeytype"),
    (2617, "oid oprname oprnamespace oprowner oprkind oprcanmerge oprcanhash oprleft oprright oprresult oprcom oprnegate oprcode oprrest oprjoin"),
    (2618, "oid rulename ev_class ev_type ev_enabled is_instead ev_qual ev_action"),
    (2620, "oid tgrelid tgparentid tgname tgfoid tgtype tgenabled tgisinternal tgconstrrelid tgconstrindid tgconstraint tgdeferrable tginitdeferred tgnargs tgattr tgargs tgqual tgoldtable tgnewtable"),
    (2753, "oid opfmethod opfname opfnamespace opfowner"),
    (2964, "setdatabase setrole setconfig"),
    (2995, "oid lomowner lomacl"),
    (3079, "oid extname extowner extnamespace extrelocatable extversion extconfig extcondition"),
    (3118, "ftrelid ftserver ftoptions"),
    (3256, "oid polname polrelid polcmd polpermissive polroles polqual polwithcheck"),
    (3350, "partrelid partstrat partnatts partdefid partattrs partclass partcollation partexprs"),
    (3381, "oid stxrelid stxname stxnamespace stxowner stxstattarget stxkeys stxkind stxexprs"),
    (3394, "objoid classoid objsubid privtype initprivs"),
    (3456, "oid collname collnamespace collowner collprovider collisdeterministic collencoding collcollate collctype colliculocale collversion"),
    (3466, "oid evtname evtevent evtowner evtfoid evtenabled evttags"),
    (3541, "rngtypid rngsubtype rngmultitypid rngcollation rngsubopc rngcanonical rngsubdiff"),
    (3576, "oid trftype trflang trffromsql trftosql"),
    (3592, "objoid classoid provider label"),
    (3596, "objoid classoid objsubid provider label"),
    (3600, "oid dictname dictnamespace dictowner dicttemplate dictinitoption"),
    (3601, "oid prsname prsnamespace prsstart prstoken prsend prsheadline prslextype"),
    (3602, "oid cfgname cfgnamespace cfgowner cfgparser"),
    (3764, "oid tmplname tmplnamespace tmplinit tmpllexize"),
    (6100, "oid subdbid subskiplsn subname subowner subenabled subbinary substream subtwophasestate subdisableonerr subconninfo subslotname subsynccommit subpublications"),
    (6104, "oid pubname pubowner puballtables pubinsert pubupdate pubdelete pubtruncate pubviaroot"),
    (6106, "oid prpubid prrelid prqual prattrs"),
    (6237, "oid pnpubid pnnspid"),
];

/// The `attnum` of column `name` of the catalog relation `oid`.
pub fn catalog_attnum(oid: i64, name: &str) -> Option<i16> {
    let (_, cols) = COLUMNS.iter().find(|(o, _)| *o == oid)?;
    let at = cols.split(' ').position(|c| c == name)?;
    i16::try_from(at + 1).ok()
}
