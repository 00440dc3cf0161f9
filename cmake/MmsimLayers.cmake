# mmsim_layer(): one static library per layer of src/, with the layering
# enforced at configure time.
#
#   mmsim_layer(NAME <layer>
#               SOURCES <file>...
#               [DEPS <layer>...]            # layers below; linked PUBLIC
#               [PUBLIC_LIBS <target>...]    # third-party libraries, PUBLIC
#               [PRIVATE_LIBS <target>...])  # third-party libraries, PRIVATE
#
# Call it from src/<layer>/CMakeLists.txt. It creates the library
# mmsim_<layer>, links exactly the DEPS layers' libraries PUBLIC, and puts
# src/ on the PUBLIC include path (so includes read "layer/file.h").
#
# Layers are declared bottom-up: DEPS may only name layers declared before.
# Each layer's DEPS and their transitive closure ("its layers below") are
# recorded in global properties (MMSIM_LAYERS, MMSIM_LAYER_DEPS_<layer>,
# MMSIM_LAYER_BELOW_<layer>).
#
# The scan: every .h/.cc file under the layer's folder is read for lines
#   #include "X/..."
# where X is a folder of src/. X must be the layer itself or one of its layers
# below; otherwise configure stops with a FATAL_ERROR naming the file and line.
# The scanned files are CMAKE_CONFIGURE_DEPENDS, so editing any of them makes
# the next build re-run configure (a few seconds) and so re-check the layering.
# The scan is textual: an #include inside a comment or `#if 0` counts too.
#
# MMSIM_LAYERS_ROOT (default: ${PROJECT_SOURCE_DIR}/src) is the folder whose
# sub-folders are the layers.

include_guard(GLOBAL)

function(mmsim_layer)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "NAME"
                        "SOURCES;DEPS;PUBLIC_LIBS;PRIVATE_LIBS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mmsim_layer: unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_NAME)
    message(FATAL_ERROR "mmsim_layer: NAME is required")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mmsim_layer(${ARG_NAME}): SOURCES is required")
  endif()
  set(layer "${ARG_NAME}")

  if(DEFINED MMSIM_LAYERS_ROOT)
    set(root "${MMSIM_LAYERS_ROOT}")
  else()
    set(root "${PROJECT_SOURCE_DIR}/src")
  endif()
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(dir_name "${dir}" NAME)
  if(NOT dir_name STREQUAL layer)
    message(FATAL_ERROR
      "mmsim_layer(${layer}) is called from ${dir}: a layer's folder must be "
      "named after the layer (includes name it as \"${layer}/...\")")
  endif()

  # --- declaration order and the closure of the dependencies --------------
  get_property(declared GLOBAL PROPERTY MMSIM_LAYERS)
  if(layer IN_LIST declared)
    message(FATAL_ERROR "mmsim_layer: layer ${layer} is declared twice")
  endif()
  set(below "")
  foreach(dep IN LISTS ARG_DEPS)
    if(dep STREQUAL layer)
      message(FATAL_ERROR "mmsim_layer(${layer}): a layer cannot depend on itself")
    endif()
    if(NOT dep IN_LIST declared)
      string(REPLACE ";" " " declared_text "${declared}")
      if(declared_text STREQUAL "")
        set(declared_text "(none)")
      endif()
      message(FATAL_ERROR
        "mmsim_layer(${layer}):\n"
        " DEPS names ${dep}, which is not a layer declared before ${layer}\n"
        "Layers are declared bottom-up (in add_subdirectory order); declared so "
        "far: ${declared_text}")
    endif()
    get_property(dep_below GLOBAL PROPERTY MMSIM_LAYER_BELOW_${dep})
    list(APPEND below ${dep} ${dep_below})
  endforeach()
  # Keep the closure in declaration order (bottom first), without duplicates.
  set(below_ordered "")
  foreach(l IN LISTS declared)
    if(l IN_LIST below)
      list(APPEND below_ordered ${l})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY MMSIM_LAYERS ${layer})
  set_property(GLOBAL PROPERTY MMSIM_LAYER_DEPS_${layer} "${ARG_DEPS}")
  set_property(GLOBAL PROPERTY MMSIM_LAYER_BELOW_${layer} "${below_ordered}")

  # --- the include scan ----------------------------------------------------
  file(GLOB src_children LIST_DIRECTORIES true RELATIVE "${root}" "${root}/*")
  set(src_folders "")
  foreach(child IN LISTS src_children)
    if(IS_DIRECTORY "${root}/${child}")
      list(APPEND src_folders "${child}")
    endif()
  endforeach()

  file(GLOB_RECURSE scanned CONFIGURE_DEPENDS "${dir}/*.h" "${dir}/*.cc")
  list(SORT scanned)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${scanned})

  set(include_re "^[ \t]*#[ \t]*include[ \t]*\"([A-Za-z0-9_.+-]+)/([^\"]*)\"")
  set(violations "")
  foreach(file IN LISTS scanned)
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"/]+/")
    set(content "")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "${include_re}")
        continue()
      endif()
      set(target_layer "${CMAKE_MATCH_1}")
      set(included "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
      set(directive "${CMAKE_MATCH_0}")
      if(target_layer STREQUAL layer OR NOT target_layer IN_LIST src_folders
         OR target_layer IN_LIST below_ordered)
        continue()
      endif()
      # A violation: find its line number (only now read the whole file).
      if(content STREQUAL "")
        file(READ "${file}" content)
      endif()
      string(FIND "${content}" "${directive}" pos)
      set(line_no "?")
      if(pos GREATER_EQUAL 0)
        string(SUBSTRING "${content}" 0 ${pos} prefix)
        string(REGEX MATCHALL "\n" newlines "${prefix}")
        list(LENGTH newlines line_no)
        math(EXPR line_no "${line_no} + 1")
      endif()
      file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${file}")
      list(APPEND violations "${included} (${rel}:${line_no}), but ${layer} does not depend on ${target_layer}")
    endforeach()
  endforeach()

  if(violations)
    string(REPLACE ";" " " below_text "${below_ordered}")
    if(below_text STREQUAL "")
      set(below_text "(none)")
    endif()
    # Lines indented by a space are printed as they are (not re-wrapped).
    set(msg "upward #include in layer ${layer}:\n")
    foreach(v IN LISTS violations)
      string(APPEND msg " layer ${layer} includes ${v}; its layers below are: ${below_text}\n")
    endforeach()
    string(APPEND msg
      "A layer may include only its own headers and those of the layers below it "
      "(the DEPS of mmsim_layer(), transitively). Move the code down, or add the "
      "dependency in ${dir}/CMakeLists.txt if the layering allows it.")
    message(FATAL_ERROR "${msg}")
  endif()

  # --- the library -----------------------------------------------------------
  set(lib mmsim_${layer})
  add_library(${lib} ${ARG_SOURCES})
  target_include_directories(${lib} PUBLIC "${root}")
  set(dep_libs "")
  foreach(dep IN LISTS ARG_DEPS)
    list(APPEND dep_libs mmsim_${dep})
  endforeach()
  target_link_libraries(${lib} PUBLIC ${dep_libs} ${ARG_PUBLIC_LIBS}
                               PRIVATE ${ARG_PRIVATE_LIBS})
endfunction()
