package io.sparkstream.fluvio.client;

/**
 * A {@code FETCH_LOCAL} reply: the partition's offsets and where the frames a {@code FETCH}
 * would have returned lie in the leader's segment file.
 *
 * @param offsets log start, LEO and HW
 * @param path the segment file; empty when no frame is visible
 * @param baseOffset base offset of the first frame, to check what was read
 * @param position byte position of the first frame
 * @param length bytes of back-to-back frames
 * @param device {@code st_dev} of the file
 * @param inode {@code st_ino} of the file
 */
public record LocalFetch(
    PartitionOffsets offsets, String path, long baseOffset, long position, long length, long device, long inode) {}
