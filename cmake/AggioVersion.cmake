# The version's one declaration is project() in CMakeLists.txt.  This writes
# aggio_version.h from it, and checks that the Python tool, which cannot read
# it (a Python package's version lives in the package), says the same.
configure_file(${PROJECT_SOURCE_DIR}/include/aggio_version.h.in
               ${PROJECT_BINARY_DIR}/include/aggio_version.h @ONLY)

set(_py_init ${PROJECT_SOURCE_DIR}/python/aggio/__init__.py)
if(EXISTS ${_py_init})
  file(STRINGS ${_py_init} _py_version REGEX "^__version__ *= *\"")
  string(REGEX REPLACE "^__version__ *= *\"([^\"]*)\".*" "\\1" _py_version "${_py_version}")
  if(NOT _py_version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "python/aggio/__init__.py says version \"${_py_version}\", "
                        "CMakeLists.txt's project() says ${PROJECT_VERSION}: make them agree")
  endif()
endif()
