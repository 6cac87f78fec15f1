// open, read, release and the extended-attribute calls. Reads run in a Task and reply from there,
// so a FUSE thread never waits for a download.

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

enum FileOperations {
    static func open(_ request: FUSERequest, ino: UInt64, info: FileInfo) {
        let flags = info.pointer.pointee.flags
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
            request.fail(.readOnly)
            return
        }
        do {
            info.pointer.pointee.fh = try FUSEFilesystem.of(request.raw).core.openFile(ino)
            // The revision is pinned, so the kernel's page cache stays valid across opens.
            info.pointer.pointee.keep_cache = 1
            request.open(info.pointer)
        } catch {
            request.fail(error)
        }
    }

    static func read(_ request: FUSERequest, ino: UInt64, size: Int, offset: Int, handle: UInt64) {
        let core = FUSEFilesystem.of(request.raw).core
        Task {
            do {
                let bytes = try await core.read(handle: handle, offset: UInt64(max(0, offset)), size: size)
                bytes.withUnsafeBytes { request.buffer($0) }
            } catch {
                request.fail(error)
            }
        }
    }

    static func release(_ fs: FUSEFilesystem, handle: UInt64) {
        fs.core.releaseFile(handle: handle)
    }

    static func getxattr(_ request: FUSERequest, ino: UInt64, name: String, size: Int) {
        do {
            let attributes = try FUSEFilesystem.of(request.raw).core.extendedAttributes(of: ino)
            guard let value = attributes.first(where: { $0.name == name })?.value else {
                request.fail(.noAttribute)
                return
            }
            let bytes = Array(value.utf8)
            if size == 0 {
                request.xattrSize(bytes.count)
            } else if size < bytes.count {
                request.fail(.bufferTooSmall)
            } else {
                bytes.withUnsafeBytes { request.buffer($0) }
            }
        } catch {
            request.fail(error)
        }
    }

    static func listxattr(_ request: FUSERequest, ino: UInt64, size: Int) {
        do {
            let attributes = try FUSEFilesystem.of(request.raw).core.extendedAttributes(of: ino)
            var bytes: [UInt8] = []
            for attribute in attributes {
                bytes.append(contentsOf: attribute.name.utf8)
                bytes.append(0)
            }
            if size == 0 {
                request.xattrSize(bytes.count)
            } else if size < bytes.count {
                request.fail(.bufferTooSmall)
            } else {
                bytes.withUnsafeBytes { request.buffer($0) }
            }
        } catch {
            request.fail(error)
        }
    }
}
