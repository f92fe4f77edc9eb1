# The translation variants, listed once. Each group is one translation unit in the library
# (the pool and the B+tree and heap file instantiated for its policies) and one in the Python
# module (make_pool), generated into the build tree; calico/variants.h reaches every policy
# in this order (the report order: the ceiling, Calico's arrays, then the competitors).
#   group | headers | policies (types in calico::translation)
set(CALICO_VARIANT_GROUPS
  "array|translation/array/array.h|DirectTranslation ArrayTranslation"
  "array_sparse|translation/array/sparse_array.h|SparseArrayTranslation"
  "array_tiered|translation/array/array.h|TieredArrayTranslation"
  "hash|translation/hash/hash_chained.h translation/hash/hash_open.h translation/hash/hash_lockfree.h|HashChainedTranslation HashOpenTranslation HashLockFreeTranslation"
  "predictive|translation/predictive.h|PredictiveTranslation"
  "vmcache|translation/vmcache.h|VmcacheTranslation Vmcache2mTranslation"
  "lipah|translation/lipah.h|LipahTranslation"
  "array_hinted|translation/lipah.h|ArrayHintedTranslation"
  "vmcache_n|translation/vmcache_n.h|VmcacheNTranslation")

set(CALICO_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)

# One entry of CALICO_VARIANT_GROUPS, split: sets the group's name, its headers and its
# policies (lists) in the caller's scope.
function(calico_parse_variant_group spec group_var headers_var policies_var)
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 group)
  list(GET parts 1 headers)
  list(GET parts 2 policies)
  string(REPLACE " " ";" headers "${headers}")
  string(REPLACE " " ";" policies "${policies}")
  set(${group_var} ${group} PARENT_SCOPE)
  set(${headers_var} ${headers} PARENT_SCOPE)
  set(${policies_var} ${policies} PARENT_SCOPE)
endfunction()

# The vector index families: name | headers (the API, then the definitions) | the index
# class, its search state, and `idmap` where the family's unit also holds the id map that
# every BasicMapped index uses (its member templates, id_map_impl.h, are instantiated by each).
set(CALICO_VECTOR_FAMILIES
  "hnsw|calico/index/hnsw.h calico/index/mapped_index.h calico/detail/hnsw_impl.h calico/detail/id_map_impl.h calico/detail/mapped_index_impl.h|BasicHnsw HnswSearchState idmap"
  "ivf|calico/index/ivf.h calico/index/mapped_index.h calico/detail/ivf_impl.h calico/detail/id_map_impl.h calico/detail/mapped_index_impl.h|BasicIvf IvfSearchState"
  "coded|calico/index/coded_hnsw.h calico/index/mapped_index.h calico/detail/coded_hnsw_impl.h calico/detail/id_map_impl.h calico/detail/mapped_index_impl.h|BasicCodedHnsw CodedHnswSearchState")

# Writes ${group}_${family}.cc for each family into ${CALICO_GENERATED_DIR}/variants; sets
# `out_var` to them.
function(calico_generate_vector_units group headers policies out_var)
  set(sources)
  foreach(family_spec ${CALICO_VECTOR_FAMILIES})
    string(REPLACE "|" ";" parts "${family_spec}")
    list(GET parts 0 family)
    list(GET parts 1 family_headers)
    list(GET parts 2 names)
    string(REPLACE " " ";" names "${names}")
    list(GET names 0 index)
    list(GET names 1 state)
    string(REPLACE " " ";" family_headers "${family_headers}")
    set(text "// Generated from cmake/variants.cmake: the ${family} vector index for the '${group}' group.\n")
    foreach(h ${family_headers} ${headers})
      string(APPEND text "#include \"${h}\"\n")
    endforeach()
    string(APPEND text "\nnamespace calico::index {\n\n")
    foreach(p ${policies})
      set(pool "BasicBufferPool<translation::${p}>")
      string(APPEND text "template class ${index}<${pool}>;\n")
      string(APPEND text "template ${state}::${state}(const ${index}<${pool}>&);\n")
      if("idmap" IN_LIST names)
        string(APPEND text "template class BasicIdMap<${pool}>;\n")
      endif()
      string(APPEND text "template class BasicMapped<${index}<${pool}>>;\n")
      string(APPEND text "template class MappedSearchState<${index}<${pool}>>;\n")
    endforeach()
    string(APPEND text "\n}  // namespace calico::index\n")
    file(CONFIGURE OUTPUT ${CALICO_GENERATED_DIR}/variants/${group}_${family}.cc CONTENT "${text}" @ONLY)
    list(APPEND sources ${CALICO_GENERATED_DIR}/variants/${group}_${family}.cc)
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()

# Writes the library's variant sources, and the policy list of calico/variants.h, into
# ${CALICO_GENERATED_DIR}; sets `out_var` to the sources. file(CONFIGURE) rewrites a file only
# when its content changes, so a reconfigure rebuilds nothing that did not change.
function(calico_generate_library_variants out_var)
  set(sources)
  set(all_includes)
  set(all_policies)
  foreach(group_spec ${CALICO_VARIANT_GROUPS})
    calico_parse_variant_group("${group_spec}" group headers policies)
    set(text "// Generated from cmake/variants.cmake: the pool and its indexes for the '${group}' group.\n")
    string(APPEND text "#include \"calico/index/btree.h\"\n#include \"index/heap_file/heap_file_impl.h\"\n#include \"pool/definitions.h\"\n")
    foreach(h ${headers})
      string(APPEND text "#include \"${h}\"\n")
      list(APPEND all_includes "#include \"${h}\"")
    endforeach()
    string(APPEND text "\nnamespace calico {\n\n")
    foreach(p ${policies})
      string(APPEND text "template class pool::PoolCore<translation::${p}>;\n")
      string(APPEND text "template class BasicBufferPool<translation::${p}>;\n")
      string(APPEND text "template class index::BasicBTree<BasicBufferPool<translation::${p}>>;\n")
      string(APPEND text "template class index::BasicHeapFile<BasicBufferPool<translation::${p}>>;\n")
      list(APPEND all_policies "translation::${p}")
    endforeach()
    string(APPEND text "\n}  // namespace calico\n")
    file(CONFIGURE OUTPUT ${CALICO_GENERATED_DIR}/variants/${group}.cc CONTENT "${text}" @ONLY)
    list(APPEND sources ${CALICO_GENERATED_DIR}/variants/${group}.cc)
    # The vector indexes, one unit per group and index family (their headers include no
    # definitions, src/index/README.md "Compiled once": every user links these instead of
    # compiling them again), so that a change to one family's code compiles only its units.
    calico_generate_vector_units("${group}" "${headers}" "${policies}" group_sources)
    list(APPEND sources ${group_sources})
  endforeach()
  list(REMOVE_DUPLICATES all_includes)
  list(JOIN all_includes "\n" includes_text)
  list(JOIN all_policies ",\n    " policies_text)
  set(text "// Generated from cmake/variants.cmake: every translation policy, in report order.\n#pragma once\n\n")
  string(APPEND text "${includes_text}\n\n#define CALICO_ALL_TRANSLATIONS \\\n    ${policies_text}\n")
  string(REPLACE ",\n" ", \\\n" text "${text}")
  file(CONFIGURE OUTPUT ${CALICO_GENERATED_DIR}/calico/detail/all_translations.h CONTENT "${text}" @ONLY)
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()

# The Python module's variant sources (make_pool per policy); sets `out_var`.
function(calico_generate_python_variants out_var)
  set(sources)
  foreach(group_spec ${CALICO_VARIANT_GROUPS})
    calico_parse_variant_group("${group_spec}" group headers policies)
    set(text "// Generated from cmake/variants.cmake: make_pool for the '${group}' group.\n#include \"pool_impl.h\"\n")
    foreach(h ${headers})
      string(APPEND text "#include \"${h}\"\n")
    endforeach()
    string(APPEND text "\nnamespace calico::py {\n\n")
    foreach(p ${policies})
      string(APPEND text "template std::shared_ptr<PoolApi> make_pool<BasicBufferPool<translation::${p}>>(const PoolOptions&);\n")
    endforeach()
    string(APPEND text "\n}  // namespace calico::py\n")
    file(CONFIGURE OUTPUT ${CALICO_GENERATED_DIR}/python_variants/${group}.cc CONTENT "${text}" @ONLY)
    list(APPEND sources ${CALICO_GENERATED_DIR}/python_variants/${group}.cc)
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
