// Tests of InMemoryDropbox get_thumbnail_batch: a valid PNG per image (by path, id or revision),
// Dropbox's failures for everything else, a new picture for a new revision, the call counted.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxThumbnailTests {
        @Test func imagesGetPNGsAndOthersFail() async throws {
            let fake = InMemoryDropbox()
            let photo = fake.addFile("/p/a.JPG", size: 3000)
            fake.addFile("/p/b.png", size: 10)
            fake.addFile("/p/notes.txt", size: 10)
            fake.addFile("/p/huge.jpg", size: 21 << 20)
            fake.addFile("/p/empty.gif", contents: [])
            fake.addNonDownloadable("/p/doc.jpg", exportAs: "html")
            let names = ["/p/a.JPG", "/p/b.png", "/p/notes.txt", "/p/huge.jpg", "/p/empty.gif", "/p/doc.jpg", "/p/gone.jpg", "/p"]
            let results = try await fake.getThumbnailBatch(names.map { ThumbnailArg(path: $0) } + [ThumbnailArg(path: "rev:" + photo.rev)])
            #expect(results.count == 9)
            let png = try results[0].get()
            #expect(png.starts(with: TestPNG.signature))
            #expect(try results[8].get() == png)
            #expect(try results[1].get() != png)
            #expect(results[2] == .failure(.unsupportedExtension))
            #expect(results[3] == .failure(.unsupportedImage))
            #expect(results[4] == .failure(.unsupportedImage))
            #expect(results[5] == .failure(.unsupportedExtension))
            #expect(results[6] == .failure(.path(.notFound)))
            #expect(results[7] == .failure(.path(.notFile)))
            #expect(fake.callCount(.getThumbnailBatch) == 1)
            #expect(fake.thumbnailBatches.map(\.count) == [9])

            fake.modifyFile("/p/a.JPG", contents: [1, 2, 3])
            #expect(try await fake.getThumbnailBatch([ThumbnailArg(path: "/p/a.jpg")])[0].get() != png)
        }

        @Test func moreThanTwentyFiveIsTheRoutesError() async throws {
            let fake = InMemoryDropbox()
            let args = (0...ThumbnailArg.batchLimit).map { ThumbnailArg(path: "/\($0).jpg") }
            await #expect(throws: DropboxError.self) { _ = try await fake.getThumbnailBatch(args) }
        }
    }
}
