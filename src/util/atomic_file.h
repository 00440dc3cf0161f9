// Writing a file so that readers see either its old or its new contents, never
// a part, and removing a half-written temp file when a signal ends the program.
#pragma once

#include <string>
#include <string_view>

namespace mmsim::util {

// Replaces the file at `path` with `text`: writes "<path>.tmp.<pid>" in the
// same directory, fsyncs it and renames it over `path`. A new file gets mode
// 0666 less the umask; a symlink at `path` is replaced, not followed. A path
// that is not a regular file (a device such as /dev/null, a pipe) is written
// in place instead.
//
// Returns true on success. On any failure returns false, removes the temp
// file, leaves `path` as it was and, if `error` is not null, sets *error to a
// one-line reason naming `path`, e.g. "cannot write out/run.json: cannot
// create out/run.json.tmp.4242: Permission denied".
//
// While the temp file exists its name is registered for
// remove_pending_temp_file(). The registry has one slot: when two threads
// write at once only the first one's temp file is registered, and two threads
// must not write the same path at once (they would share the temp name).
bool write_file_atomically(const std::string& path, std::string_view text,
                           std::string* error = nullptr);

// Unlinks the temp file that write_file_atomically() is writing, if any, so
// that an interrupted write leaves nothing behind; the write in progress then
// fails. Async-signal-safe: meant for a signal handler that ends the program.
void remove_pending_temp_file();

}  // namespace mmsim::util
